#include "traces/report.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "hw/error.h"
#include "hw/input_files.h"

namespace wafer::traces {

void Report::add(std::string key, double value, std::string unit, std::string description) {
  order_.push_back(key);
  stats_.push_back({std::move(key), value, std::move(unit), std::move(description)});
}
void Report::add_int(std::string key, std::int64_t value, std::string unit, std::string description) {
  order_.push_back(key);
  stats_.push_back({std::move(key), value, std::move(unit), std::move(description)});
}
void Report::add_uint(std::string key, std::uint64_t value, std::string unit, std::string description) {
  order_.push_back(key);
  stats_.push_back({std::move(key), value, std::move(unit), std::move(description)});
}
void Report::add_text(std::string key, std::string value, std::string description) {
  order_.push_back(key);
  stats_.push_back({std::move(key), std::move(value), {}, std::move(description)});
}
Column Column::parse(std::string_view header) {
  const std::size_t open = header.rfind(" [");
  if (open != std::string_view::npos && header.ends_with(']'))
    return {std::string(header.substr(0, open)), std::string(header.substr(open + 2, header.size() - open - 3))};
  return {std::string(header), {}};
}
std::string Column::header() const { return unit.empty() ? name : name + " [" + unit + "]"; }

Table& Report::add_table(std::string key, const std::vector<std::string>& columns, std::string description) {
  order_.push_back(key);
  std::vector<Column> cols;
  for (const auto& c : columns) cols.push_back(Column::parse(c));
  tables_.push_back({std::move(key), std::move(description), std::move(cols), {}});
  return tables_.back();
}
Matrix& Report::add_matrix(std::string key, std::int32_t cols, std::int32_t rows, std::vector<double> values,
                           std::string unit, std::string description) {
  order_.push_back(key);
  values.resize(std::size_t(std::max(0, cols)) * std::size_t(std::max(0, rows)), 0.0);
  matrices_.push_back({std::move(key), std::move(unit), std::move(description), cols, rows, std::move(values)});
  return matrices_.back();
}
Report& Report::section(const std::string& key, std::string title) {
  for (auto& [k, r] : sections_)
    if (k == key) return *r;
  order_.push_back(key);
  sections_.emplace_back(key, std::make_unique<Report>(title.empty() ? key : std::move(title)));
  return *sections_.back().second;
}
const Stat& Report::stat(const std::string& key) const {
  for (const auto& s : stats_)
    if (s.key == key) return s;
  throw std::out_of_range("no statistic '" + key + "' in report '" + title_ + "'");
}
double Report::number(const std::string& key) const {
  const Stat& s = stat(key);
  if (auto d = std::get_if<double>(&s.value)) return *d;
  if (auto i = std::get_if<std::int64_t>(&s.value)) return double(*i);
  if (auto u = std::get_if<std::uint64_t>(&s.value)) return double(*u);
  throw std::out_of_range("statistic '" + key + "' is text");
}
const Report& Report::sub(const std::string& key) const {
  for (const auto& [k, r] : sections_)
    if (k == key) return *r;
  throw std::out_of_range("no section '" + key + "' in report '" + title_ + "'");
}

namespace {
template <class Variant>
nlohmann::json cell(const Variant& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, double>) {
          if (!std::isfinite(x)) return nullptr;  // JSON has no NaN/inf
        }
        return x;
      },
      v);
}
template <class Variant>
std::string show(const Variant& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, double>) return fmt::format("{:.6g}", x);
        else if constexpr (std::is_same_v<T, std::string>) return x;
        else return fmt::format("{}", x);
      },
      v);
}
}  // namespace

nlohmann::json Report::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& key : order_) {
    bool done = false;
    for (const auto& s : stats_)
      if (s.key == key) {
        if (std::holds_alternative<std::string>(s.value)) j[key] = std::get<std::string>(s.value);
        else j[key] = {{"value", cell(s.value)}, {"unit", s.unit}};
        done = true;
        break;
      }
    if (done) continue;
    for (const auto& t : tables_)
      if (t.key == key) {
        nlohmann::json cols = nlohmann::json::array();
        for (const auto& c : t.columns) cols.push_back({{"name", c.name}, {"unit", c.unit}});
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& r : t.rows) {
          nlohmann::json row = nlohmann::json::array();
          for (std::size_t c = 0; c < t.columns.size(); ++c) row.push_back(c < r.size() ? cell(r[c]) : nlohmann::json());
          rows.push_back(std::move(row));
        }
        j[key] = {{"columns", std::move(cols)}, {"rows", std::move(rows)}};
        done = true;
        break;
      }
    if (done) continue;
    for (const auto& m : matrices_)
      if (m.key == key) {
        nlohmann::json rows = nlohmann::json::array();
        for (std::int32_t y = 0; y < m.rows; ++y) {
          nlohmann::json row = nlohmann::json::array();
          for (std::int32_t x = 0; x < m.cols; ++x)
            row.push_back(cell(std::variant<double>(m.values[std::size_t(y) * std::size_t(m.cols) + std::size_t(x)])));
          rows.push_back(std::move(row));
        }
        j[key] = {{"value", std::move(rows)}, {"unit", m.unit}};
        done = true;
        break;
      }
    if (done) continue;
    for (const auto& [k, r] : sections_)
      if (k == key) {
        j[key] = r->to_json();
        break;
      }
  }
  return j;
}

void Report::print(std::FILE* out, int indent) const {
  const std::string pad(std::size_t(indent), ' ');
  if (!title_.empty()) fmt::print(out, "{}{}\n", pad, title_);
  std::size_t width = 0;
  for (const auto& s : stats_) width = std::max(width, s.key.size());
  for (const auto& m : matrices_) width = std::max(width, m.key.size());
  for (const auto& key : order_) {
    bool done = false;
    for (const auto& s : stats_)
      if (s.key == key) {
        std::string value = show(s.value) + (s.unit.empty() ? "" : " " + s.unit);
        if (s.description.empty()) fmt::print(out, "{}  {:<{}}  {}\n", pad, s.key, width, value);
        else fmt::print(out, "{}  {:<{}}  {:<22}  {}\n", pad, s.key, width, value, s.description);
        done = true;
        break;
      }
    if (done) continue;
    for (const auto& t : tables_)
      if (t.key == key) {
        fmt::print(out, "{}  {}{}\n", pad, t.key, t.description.empty() ? "" : " (" + t.description + ")");
        std::vector<std::string> head;
        for (const auto& c : t.columns) head.push_back(c.header());
        std::vector<std::size_t> w(t.columns.size());
        for (std::size_t c = 0; c < t.columns.size(); ++c) w[c] = head[c].size();
        std::vector<std::vector<std::string>> cells;
        std::vector<bool> text(t.columns.size(), false);
        for (const auto& r : t.rows) {
          cells.emplace_back();
          for (std::size_t c = 0; c < r.size() && c < w.size(); ++c) {
            cells.back().push_back(show(r[c]));
            if (std::holds_alternative<std::string>(r[c])) text[c] = true;
            w[c] = std::max(w[c], cells.back().back().size());
          }
        }
        std::string line = pad + "   ";
        auto put = [&](std::size_t c, const std::string& v) {
          line += text[c] ? fmt::format(" {:<{}}", v, w[c]) : fmt::format(" {:>{}}", v, w[c]);
        };
        for (std::size_t c = 0; c < t.columns.size(); ++c) put(c, head[c]);
        fmt::print(out, "{}\n", line);
        for (const auto& r : cells) {
          line = pad + "   ";
          for (std::size_t c = 0; c < r.size(); ++c) put(c, r[c]);
          fmt::print(out, "{}\n", line);
        }
        done = true;
        break;
      }
    if (done) continue;
    for (const auto& m : matrices_)
      if (m.key == key) {
        fmt::print(out, "{}  {:<{}}  {} x {} matrix [{}]{}\n", pad, m.key, width, m.cols, m.rows, m.unit,
                   m.description.empty() ? "" : "  " + m.description);
        done = true;
        break;
      }
    if (done) continue;
    for (const auto& [k, r] : sections_)
      if (k == key) r->print(out, indent + 2);
  }
}

nlohmann::json results_json(const Report& report) {
  nlohmann::json j = report.to_json();
  j["schema_version"] = kResultsSchemaVersion;
  return j;
}

namespace {
// The descriptor a path names (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), else -1.
int descriptor_of(const std::string& text) {
  if (text == "/dev/stdout") return 1;
  if (text == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string_view p(prefix);
    if (!text.starts_with(p) || text.size() == p.size() || text.size() > p.size() + 6) continue;
    int fd = 0;
    for (char c : std::string_view(text).substr(p.size())) {
      if (c < '0' || c > '9') return -1;
      fd = fd * 10 + (c - '0');
    }
    return fd;
  }
  return -1;
}
}  // namespace

OutputPath output_path(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  const std::string text = (ec ? path : abs).lexically_normal().string();
  if (const int fd = descriptor_of(text); fd >= 0) return {path, {}, fd};
  const fs::file_status st = fs::status(path, ec);  // (through symbolic links)
  const bool exists = !ec && st.type() != fs::file_type::not_found;
  if (text.starts_with("/dev/") || text.starts_with("/proc/") ||
      (exists && st.type() != fs::file_type::regular && st.type() != fs::file_type::directory))
    return {path, {}};
  // A link (or a chain of them) is followed by hand: weakly_canonical does not follow one to a file that does not
  // exist yet, and a rename over the link itself replaced it with the file, its target never written.
  fs::path target = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(target, ec)); ++hops) {
    const fs::path to = fs::read_symlink(target, ec);
    if (ec) break;
    target = to.is_absolute() ? to : target.parent_path() / to;
  }
  if (target != path) {
    const fs::path resolved = fs::weakly_canonical(target, ec);
    if (!ec) target = resolved;
  }
  fs::path tmp = target;
  tmp += ".tmp";
  return {target, tmp};
}

void check_writable(const std::filesystem::path& path, std::string_view option) {
  // (a folder would pass the probe below, PATH.tmp beside it, and fail only at the end, at the rename)
  std::error_code dir_ec;
  // (what the errors name: the option and its path, or the path alone)
  const std::string who = option.empty() ? path.string() : fmt::format("{} {}", option, path.string());
  if (path.empty())
    throw hw::InputError(fmt::format("{}an output path is empty; give the path of a file to write",
                                     option.empty() ? std::string() : std::string(option) + ": "));
  if (!path.has_filename() || std::filesystem::is_directory(path, dir_ec))
    throw hw::InputError(fmt::format("{}: is a folder; give the path of a file to write", who));
  // (a name of blanks only is a slip: --json ' ' wrote a file named by a space)
  if (const std::string name = path.filename().string(); name.find_first_not_of(" \t\n\r\v\f") == std::string::npos)
    throw hw::InputError(fmt::format("{}'{}': a file name of blanks only; give the path of a file to write",
                                     option.empty() ? std::string() : std::string(option) + " ", path.string()));
  const OutputPath out = output_path(path);
  if (out.fd >= 0) {
    const int flags = ::fcntl(out.fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
      throw hw::InputError(fmt::format("{}: cannot write output file (descriptor {} is {})", who, out.fd,
                                       flags < 0 ? "not open" : "open for reading only"));
    return;
  }
  if (out.stream()) {  // (not opened: opening would truncate what a redirected /dev/stdout already holds)
    hw::refuse_overwriting_input(out.target);  // (an input read already: refused before the run)
    if (::access(out.target.c_str(), W_OK) != 0)
      throw hw::InputError(fmt::format("{}: cannot write output file ({})", who, std::strerror(errno)));
    return;
  }
  std::ofstream f(out.tmp, std::ios::trunc);
  if (!f) {
    const std::filesystem::path folder = out.target.parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder, dir_ec))
      throw hw::InputError(fmt::format("{}: cannot write output file: its folder {} does not exist", who,
                                       folder.string()));
    throw hw::InputError(fmt::format("{}: cannot write output file", who));
  }
  f.close();
  std::error_code ec;
  std::filesystem::remove(out.tmp, ec);
}

std::FILE* open_output(const OutputPath& out, const std::filesystem::path& path) {
  std::FILE* f = nullptr;
  // (a stream too: /dev/stdin redirected from the model config appended the results to it, and a FIFO read as an
  // input was waited on for ever as the output)
  hw::refuse_overwriting_input(out.fd >= 0 ? path : out.target);
  if (out.fd >= 0) {  // (through a copy of the descriptor: the same offset, after what stdout has printed)
    std::fflush(stdout), std::fflush(stderr);
    const int copy = ::dup(out.fd);
    f = copy < 0 ? nullptr : ::fdopen(copy, "ab");
    if (!f && copy >= 0) ::close(copy);
  } else {
    f = std::fopen(out.stream() ? out.target.c_str() : out.tmp.c_str(), out.stream() ? "ab" : "wb");
  }
  if (!f) throw hw::InputError(fmt::format("{}: cannot write output file", path.string()));
  return f;
}

void close_output(std::FILE* f, bool ok, const OutputPath& out, const std::filesystem::path& path) {
  ok = std::fflush(f) == 0 && ok;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    std::error_code ec;
    if (!out.stream()) std::filesystem::remove(out.tmp, ec);
    throw hw::InputError(fmt::format("{}: cannot write output file", path.string()));
  }
  if (!out.stream()) rename_into_place(out.tmp, out.target);
}

void write_text_atomic(const std::filesystem::path& path, const std::string& text) {
  const OutputPath out = output_path(path);
  std::FILE* f = open_output(out, path);
  close_output(f, std::fwrite(text.data(), 1, text.size(), f) == text.size(), out, path);
}

void rename_into_place(const std::filesystem::path& tmp, const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // (nothing left behind)
    throw hw::InputError(fmt::format("{}: cannot write output file: {}", path.string(), ec.message()));
  }
}

void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j) {
  write_text_atomic(path, j.dump(2) + "\n");
}

}  // namespace wafer::traces
