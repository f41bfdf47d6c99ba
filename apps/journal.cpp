#include "apps/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <variant>

#include "apps/file_lock.h"
#include "apps/sweep.h"
#include "hw/error.h"

namespace wafer::apps {

namespace fs = std::filesystem;

nlohmann::ordered_json wafer_settings(const hw::WaferSpec& spec) {
  nlohmann::ordered_json w;
  w["name"] = spec.name;
  for (const hw::ParamInfo& pi : hw::wafer_params())
    std::visit([&](auto member) { w[std::string(pi.key)] = spec.*member; }, pi.member);
  return w;
}

Journal::Journal(const fs::path& path, const std::string& settings, std::string option, std::string run)
    : path_(path), option_(std::move(option)), run_(std::move(run)) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw hw::InputError(fmt::format("{}: cannot open the journal {} ({})", option_, path.string(), std::strerror(errno)));
  // (a device or a pipe in its place: /dev/zero was read until the memory ran out, a FIFO failed to seek)
  if (!regular_file(fd_)) {
    ::close(fd_);
    throw hw::InputError(fmt::format("{}: the journal {} is not a file (a device or a pipe); remove it", option_, path.string()));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    throw hw::InputError(fmt::format("{}: another {} run holds its journal {}", option_, run_, path.string()));
  }
  const std::string text = read_from(fd_, 0, path.string());
  std::size_t at = 0, keep = 0;  // (keep: the bytes of whole lines)
  std::vector<nlohmann::json> lines;
  for (std::size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
    auto j = nlohmann::json::parse(text.begin() + std::ptrdiff_t(at), text.begin() + std::ptrdiff_t(nl), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      ::close(fd_);
      throw hw::InputError(fmt::format("{}: the journal {} has a damaged line {}; remove it to start the {} afresh", option_,
                                       path.string(), lines.size() + 1, run_));
    }
    lines.push_back(std::move(j));
    keep = nl + 1;
  }
  // (a journal of no record, a run stopped before its first, is started afresh whatever its settings)
  if (lines.size() <= 1) keep = 0, lines.clear();
  if (!lines.empty() && !(lines.front().contains("settings") && lines.front()["settings"].is_string() &&
                          lines.front()["settings"].get<std::string>() == settings)) {
    ::close(fd_);
    throw hw::InputError(fmt::format("{}: the journal {} is of a {} with other settings; run that command again to finish "
                                     "it, or remove the journal",
                                     option_, path.string(), run_));
  }
  if (::ftruncate(fd_, off_t(keep)) != 0 || ::lseek(fd_, off_t(keep), SEEK_SET) < 0) {
    const int e = errno;
    ::close(fd_);
    throw hw::InputError(fmt::format("{}: cannot write the journal {} ({})", option_, path.string(), std::strerror(e)));
  }
  if (lines.empty()) write_line(nlohmann::json{{"settings", settings}});
  else kept_.assign(lines.begin() + 1, lines.end());
}

Journal::~Journal() {
  if (records() == 0) remove();  // (nothing to resume: a run that failed before its first record)
  if (fd_ >= 0) ::close(fd_);    // (its lock goes with it)
}

std::string hash_file(const fs::path& path) {
  // (Opened without waiting for a writer: a pipe, read once already as the input, would be waited on for ever.)
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) return sweep::hash_text("");
  if (!regular_file(f.fd))
    throw hw::InputError(fmt::format("{}: not a file: its bytes are hashed to resume this run later, and a pipe can be "
                                     "read only once (give a file)", path.string()));
  return sweep::hash_text(read_from(f.fd, 0, path.string()));
}

fs::path Journal::beside(const fs::path& output) {
  const fs::path parent = output.has_parent_path() ? output.parent_path() : fs::path(".");
  return parent / fmt::format(".{}.partial.jsonl", output.filename().string());
}

void Journal::append(const nlohmann::json& record) {
  write_line(record);
  ++added_;
}

void Journal::remove() {
  std::error_code ec;
  fs::remove(path_, ec);
}

void Journal::write_line(const nlohmann::json& j) {
  if (const int e = write_all(fd_, j.dump() + "\n"))
    throw hw::InputError(fmt::format("{}: writing the journal {} failed ({})", option_, path_.string(), std::strerror(e)));
  ::fdatasync(fd_);
}

}  // namespace wafer::apps
