#pragma once
// `wafer-emu sweep`: a study of many decode points (docs/studies.md). A study file names fixed settings and
// axes; the points are their cross product, each with a stable index and hash. Finished points are
// appended, one JSON line each, to DIR/points.jsonl, so a study resumes where it stopped.
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/decode_point.h"
#include "apps/memory_gate.h"
#include "apps/point_cache.h"
#include "hw/defect_map.h"
#include "sim/simulator.h"
#include "traces/report.h"

namespace wafer::apps::sweep {

using ojson = nlohmann::ordered_json;

inline constexpr std::int64_t kSchema = 1;
inline constexpr std::string_view kDefaultModel = "llama-3.1-8b";  // a study's model when it names none (as decode's)
inline constexpr std::string_view kDefaultWafer = "wse3";          // ... and its wafer
inline constexpr std::int64_t kMaxPoints = 100'000;  // every point is checked before any runs (~25 us each); split larger studies

// A study file, parsed. Keys and value types are checked by parse_study; names (models, placements, ...)
// by check_study.
struct Study {
  std::string path;              // the study file as given (prefixes every message)
  std::filesystem::path dir;     // its folder: relative wafer and model paths start there
  ojson spec;                    // the file's content
  std::string hash;              // 16 hex digits over the content without "note"
  std::string name;
  std::vector<std::pair<std::string, ojson>> fixed;                  // in file order
  // In file order; the last varies fastest. An axis named by a setting holds its values; a joint axis (any other
  // name) holds objects of settings that change together, every one with the same keys (a placement and its
  // kernel, say: {"placement": "square", "kernel": "meshgemv"}).
  std::vector<std::pair<std::string, std::vector<ojson>>> axes;
  std::int64_t points() const;
  // The settings of point `index`: the fixed ones, then each axis's value in file order (a joint axis's
  // settings in the order its objects give them).
  ojson settings(std::int64_t index) const;
  // Point `index`'s value on each axis, by axis name (a joint axis's: its object).
  ojson axis_values(std::int64_t index) const;
  static bool joint(const std::string& axis);  // an axis of several settings at once (its name is no setting)
  // The axis that sweeps `setting` (itself, or the joint axis holding it); empty when none does.
  std::string axis_of(const std::string& setting) const;
};

// Keys, types, axes (non-empty lists or {"from", "count"} ranges), no key twice. `where` names the file.
Study parse_study(const ojson& j, const std::string& where, const std::filesystem::path& dir);
// Reads the file, parses it and checks every value and every point (check_study).
Study load_study(const std::filesystem::path& file);

// FNV-1a, 64 bits, as 16 hex digits.
std::string hash_text(const std::string& s);

// One point's settings resolved to what `decode` would run.
struct Resolved {
  DecodePoint point;
  bool defects = false;  // "density" given: generate a map and repair it
  hw::DefectGenParams gen;
  std::uint64_t seed = 1;
  std::string repair = "row-shift";
};

// Resolves settings; wafers and models are loaded once. InputError naming the file, the key and the point.
class Resolver {
 public:
  explicit Resolver(const Study& study) : study_(study) {}
  Resolved resolve(const ojson& settings, std::int64_t index);
  // One value of one key, as the study gives it (names known, ranges): InputError "FILE: key 'K': ...".
  void check_value(const std::string& key, const ojson& v, const std::string& path);
  // The clock of the wafer of a point with these settings (its preset or file, and a clock_ghz setting), in GHz;
  // none when its wafer file cannot be read now.
  std::optional<double> clock_ghz(const ojson& settings);

 private:
  hw::WaferSpec wafer(const std::string& arg, const std::string& key);
  const mapper::ModelConfig& model(const std::string& arg, const std::string& key);
  const Study& study_;
  std::map<std::string, hw::WaferSpec> wafers_;
  std::map<std::string, mapper::ModelConfig> models_;
};

// Every value checked and every point resolved; nothing is mapped or emulated.
void check_study(const Study& study);

// Runs point `index`: defects, repair, map, emulate. A mapper or emulator refusal is recorded in the line
// ("status": "failed"), not thrown. The line has no trailing newline.
// What an earlier point of the process left that this one could use is taken from `cache` (apps/point_cache.h);
// the line is the same with or without it but for wall_s, which lists what was kept ("kept").
// `threads`: the point's wafers emulated at once (DecodePoint::threads; the line is the same for any number).
// `gate`: when given, the emulation waits for its admission (apps/memory_gate.h; wall_s.memory_wait says how
// long), so the processes of a study on one host never hold more task records at once than fit.
ojson run_point(PointCache& cache, Resolver& resolver, const Study& study, std::int64_t index, std::uint32_t threads = 1,
                MemoryGate* gate = nullptr);

// DIR/points.jsonl: appended under an exclusive lock, each line written whole and fsync'ed. A last line that
// is not complete JSON (a writer killed mid-line) is cut off before anything is read or appended.
class PointsFile {
 public:
  // read_only: for a reader (--summarize), which neither creates the file (none: no point yet) nor cuts off a line
  // cut short.
  PointsFile(const std::filesystem::path& dir, std::string study_hash, std::int64_t points, bool read_only = false);
  ~PointsFile();
  PointsFile(const PointsFile&) = delete;
  PointsFile& operator=(const PointsFile&) = delete;

  // Reads the lines written since the last call (other processes append too).
  void refresh();
  bool done(std::int64_t index) const { return done_.count(index) > 0; }
  std::int64_t count() const { return std::int64_t(done_.size()); }
  std::int64_t failed() const { return failed_; }
  // Appends the line unless its point is already there (another process finished it first).
  void append(const ojson& line);
  // Every point line, by index (first line of an index wins).
  std::map<std::int64_t, ojson> read_all();

 private:
  void refresh_locked();
  std::filesystem::path path_;
  std::string study_;
  std::int64_t points_;
  bool read_only_ = false;
  int fd_ = -1;
  std::int64_t offset_ = 0;  // bytes read so far
  std::set<std::int64_t> done_;
  std::int64_t failed_ = 0;
};

// Prepares DIR for the study: creates it (its parent must exist) and writes DIR/spec.json (the study, its hash and
// point count, and `inputs`: the hash of each model config and wafer file the study names, input_digests), or
// checks that the DIR/spec.json there is this study's and that the files it names still have the content they had.
// InputError when DIR holds another study, or points run with other files: never mixed.
void prepare_dir(const std::filesystem::path& dir, const Study& study);
// "model NAME" / "wafer PATH" -> hash_text of the file's content, for every model (shipped or a file) and wafer file
// the study names; a file that cannot be read is left out (the point naming it fails, saying why).
ojson input_digests(const Study& study);
// The model config and wafer files the study names ("model ARG" / "wafer ARG", and the file read for it; relative
// paths from the study file's folder), each once, and the default model's config when it names no model: what
// input_digests hashes.
std::vector<std::pair<std::string, std::filesystem::path>> input_files(const Study& study);
// The summary files a whole sweep and --summarize write into DIR (each through write_shared, as spec.json).
inline constexpr std::string_view kSummaryFiles[] = {"summary.csv", "summary.json", "placements.csv", "sensitivity.csv"};
// Writes PATH through a temporary file of this process's own (PATH.tmp.PID) and a rename: processes of one
// study may write the same file at once, and a reader never sees a partial one.
void write_shared(const std::filesystem::path& path, const std::string& text);
// Writes `text` to PATH.tmp.PID and returns that path; InputError naming PATH (and the reason) when it cannot,
// the temporary file removed.
std::filesystem::path write_temp(const std::filesystem::path& path, const std::string& text);
// Refuses (InputError ending in `remedy`) a study whose model config or wafer file has other content than when its
// first points ran (DIR/spec.json's `inputs`; a file that cannot be read now, or a folder of an older build, passes).
void check_inputs(const std::filesystem::path& dir, const Study& study, const std::string& remedy);
// Reads DIR/spec.json back (for --summarize, report): `dir` is the folder of the study file it was made from.
Study read_dir_study(const std::filesystem::path& dir);

// Percentile p (0..100) of sorted values, linear between closest ranks: x[h] with h = p / 100 x (n - 1).
double percentile(const std::vector<double>& sorted, double p);
// "3 rows, 12 tiles" -> "# rows, # tiles": failures that differ only in numbers are counted together.
std::string reason_class(const std::string& reason);

// Refuses ("WHERE: ... (edited?)") a point line of study `study` at `index` whose content no run writes: a status
// other than ok or failed, a hash other than its settings' (the study's at its index), a repair whose `complete`
// is no boolean, usable tiles or extra hops that are no count, an ok point without a whole latency in cycles and a
// positive one in µs, and figures that disagree: settings not the study's at the index, µs not the cycles at the
// point's wafer clock (`resolver`, when given and the wafer can be read; else at any clock a wafer may have),
// breakdown_cycles not whole cycles summing to the latency, a failed point without its failure {stage, reason}.
// What summarize and report read (a line edited in place was summarised as it stood).
void check_point_line(const ojson& line, const Study& study, std::int64_t index, const std::string& where,
                      Resolver* resolver = nullptr);

// The summary of the points in `lines` (apps/sweep_summary.cpp, docs/studies.md "The summary"): per setting over
// the seeds; with a placement axis, the placements side by side and the best; per wafer-parameter axis, the
// latency's sensitivity. Writes DIR/summary.csv, summary.json, and placements.csv / sensitivity.csv when they apply.
traces::Report summarize(const std::filesystem::path& dir, const Study& study, const std::map<std::int64_t, ojson>& lines);

}  // namespace wafer::apps::sweep
