// Seeded mutation fuzzing of the parsers that read users' files. Each starts from shipped good inputs and
// feeds the parser thousands of mutants (bytes flipped, inserted, deleted, duplicated, truncated, lines
// swapped), each written to a file as a user would give it. Every mutant must either parse or be refused
// with hw::InputError (the one-line error the program prints): any other exception, a crash or a sanitizer
// report fails. Deterministic (hw::Rng, fixed seeds). An input that once crashed a parser is kept in
// tests/fuzz/regressions/ and replayed first.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "hw/defect_map.h"
#include "hw/error.h"
#include "hw/random.h"
#include "hw/wafer_spec.h"
#include "mapper/model_config.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string mutate(std::string s, wafer::hw::Rng& rng) {
  static const char* kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "-", "0", "1e309", "null", "true", "-1",
                                  "99999999999999999999", "\n", ",,", "NaN", "\\u0000", "x", " "};
  const int edits = 1 + int(rng.next() % 4);
  for (int e = 0; e < edits; ++e) {
    const std::size_t n = s.size();
    const std::size_t at = n ? std::size_t(rng.next() % n) : 0;
    switch (rng.next() % 7) {
      case 0: if (n) s[at] = char(rng.next() & 0xFF); break;                          // a byte replaced
      case 1: s.insert(at, kTokens[rng.next() % std::size(kTokens)]); break;          // a token inserted
      case 2: if (n) s.erase(at, 1 + std::size_t(rng.next() % 8)); break;            // bytes deleted
      case 3: if (n) s.insert(at, s.substr(at, 1 + std::size_t(rng.next() % 32))); break;  // a run duplicated
      case 4: s.resize(at); break;                                                     // truncated
      case 5: {                                                                        // a digit run changed
        std::size_t d = s.find_first_of("0123456789", at);
        if (d != std::string::npos) s.insert(d, std::to_string(rng.next() % 100000));
        break;
      }
      default: {                                                                       // two lines swapped
        std::size_t a = s.find('\n', at), b = a == std::string::npos ? a : s.find('\n', a + 1);
        if (b != std::string::npos) {
          std::size_t c = s.find('\n', b + 1);
          if (c != std::string::npos) s = s.substr(0, a + 1) + s.substr(b + 1, c - b) + s.substr(a + 1, b - a) + s.substr(c + 1);
        }
      }
    }
  }
  return s;
}

// Feeds `mutants` mutants of every seed file to `parse` (which reads the file it is given).
void fuzz(const std::string& what, const std::vector<fs::path>& seeds, const std::string& ext, int mutants,
          std::uint64_t seed, const std::function<void(const fs::path&)>& parse) {
  const fs::path dir = fs::temp_directory_path() / ("wafer-fuzz-" + what + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / ("input" + ext);
  std::vector<std::string> inputs;
  const fs::path reg = fs::path(WAFER_SOURCE_DIR) / "tests/fuzz/regressions" / what;
  if (fs::is_directory(reg))
    for (const auto& e : fs::directory_iterator(reg)) inputs.push_back(slurp(e.path()));
  wafer::hw::Rng rng(seed);
  for (const auto& s : seeds) {
    const std::string good = slurp(s);
    ASSERT_FALSE(good.empty()) << s;
    for (int i = 0; i < mutants; ++i) inputs.push_back(mutate(good, rng));
  }
  int refused = 0, kept = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    { std::ofstream(file, std::ios::binary) << inputs[i]; }
    try {
      parse(file);
    } catch (const wafer::hw::InputError&) {
      ++refused;
    } catch (const std::exception& e) {
      const fs::path keep = dir / ("crash-" + std::to_string(i) + ext);
      std::ofstream(keep, std::ios::binary) << inputs[i];
      ++kept;
      ADD_FAILURE() << what << ": mutant " << i << " threw " << typeid(e).name() << ": " << e.what() << " (kept as "
                    << keep << ")";
    }
  }
  if (kept == 0) fs::remove_all(dir);  // (else it holds the inputs that failed)
  std::printf("%s: %zu inputs, %d refused with a one-line error, %zu parsed\n", what.c_str(), inputs.size(), refused,
              inputs.size() - std::size_t(refused));
  EXPECT_GT(refused, 0) << "no mutant was refused: the mutator does nothing";
}

const fs::path kSrc(WAFER_SOURCE_DIR);

}  // namespace

TEST(Fuzz, WaferFiles) {
  fuzz("wafer", {kSrc / "configs/wafers/wse3-slow-hops.json"}, ".json", 1500, 1,
       [](const fs::path& p) { (void)wafer::hw::load_wafer_file(p); });
}

TEST(Fuzz, DefectMaps) {
  const wafer::hw::WaferSpec tiny = wafer::hw::preset("tiny");
  fuzz("defects-csv", {kSrc / "tests/cli/data/defects_ok.csv"}, ".csv", 1500, 2,
       [&](const fs::path& p) { (void)wafer::hw::read_defects(p, tiny); });
  fuzz("defects-json", {kSrc / "tests/cli/data/defects_ok.json"}, ".json", 1500, 3,
       [&](const fs::path& p) { (void)wafer::hw::read_defects(p, tiny); });
}

TEST(Fuzz, ModelConfigs) {
  fuzz("model", {kSrc / "configs/models/test/tiny-llama.json", kSrc / "configs/models/test/tiny-moe.json",
                 kSrc / "configs/models/meta-llama/Llama-3.1-8B.json"},
       ".json", 700, 4, [](const fs::path& p) { (void)wafer::mapper::load_model(p.string()); });
}
