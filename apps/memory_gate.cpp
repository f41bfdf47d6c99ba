#include "apps/memory_gate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "apps/decode_point.h"
#include "apps/file_lock.h"
#include "hw/error.h"

namespace wafer::apps {

namespace {
constexpr auto kPoll = std::chrono::milliseconds(200);

struct Entry {
  long pid = 0;
  std::uint64_t start = 0;  // the process's start time (/proc/PID/stat), so that a reused PID is not taken for it
  std::string state;        // idle, admitted, waiting
  std::uint64_t need = 0, rss0 = 0, kept0 = 0, since = 0;
};

// Field 22 of /proc/PID/stat (clock ticks since boot); none when the process is gone (or has ended and waits
// for its parent to collect its status).
std::optional<std::uint64_t> start_time(long pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  const std::size_t close = text.rfind(')');  // (the command name may hold spaces and parentheses)
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  for (int k = 3; k <= 22; ++k) {
    if (!(rest >> field)) return std::nullopt;
    if (k == 3 && (field == "Z" || field == "X")) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Resident bytes of a process (/proc/PID/statm); 0 when it cannot be read.
std::uint64_t resident(long pid) {
  std::ifstream in(fmt::format("/proc/{}/statm", pid));
  std::uint64_t size = 0, pages = 0;
  if (!(in >> size >> pages)) return 0;
  return pages * std::uint64_t(::sysconf(_SC_PAGESIZE));
}

std::uint64_t now_ns() {
  return std::uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string h = buf;
  for (char& c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return h;
}

// The table's lines of live processes but this one (a process killed mid-point leaves its line behind; a line
// that does not parse is dropped too: the table is rewritten whole under the lock).
std::vector<Entry> load_others(int fd, long self, const std::filesystem::path& path) {
  std::vector<Entry> out;
  std::istringstream lines(read_from(fd, 0, path.string()));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    Entry e;
    if (!(f >> e.pid >> e.start >> e.state >> e.need >> e.rss0 >> e.kept0 >> e.since)) continue;
    if (e.state != "idle" && e.state != "admitted" && e.state != "waiting") continue;
    if (e.pid == self || start_time(e.pid) != e.start) continue;
    out.push_back(std::move(e));
  }
  return out;
}

void save(int fd, const std::vector<Entry>& es, const std::filesystem::path& path) {
  std::string text = "# pid start state need rss0 kept0 since (apps/memory_gate.h)\n";
  for (const auto& e : es)
    text += fmt::format("{} {} {} {} {} {} {}\n", e.pid, e.start, e.state, e.need, e.rss0, e.kept0, e.since);
  if (::ftruncate(fd, 0) != 0)
    throw std::runtime_error(fmt::format("{}: truncate: {}", path.string(), std::strerror(errno)));
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(fmt::format("{}: write: {}", path.string(), std::strerror(errno)));
    done += std::size_t(n);
  }
}

}  // namespace

std::filesystem::path MemoryGate::table(const std::filesystem::path& dir) { return dir / (".memory-" + host_name()); }

std::int64_t MemoryGate::waiting(const std::filesystem::path& dir) {
  const std::filesystem::path path = table(dir);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::int64_t n = 0;
  try {
    FileLock lock(fd);
    for (const Entry& e : load_others(fd, 0, path))
      if (e.state == "waiting") ++n;
  } catch (const std::exception&) {
    n = 0;  // (progress only)
  }
  ::close(fd);
  return n;
}

MemoryGate::MemoryGate(const std::filesystem::path& dir, std::function<void()> release)
    : path_(table(dir)),
      release_(std::move(release)),
      pid_(long(::getpid())),
      start_(start_time(pid_).value_or(0)) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw hw::InputError(fmt::format("{}: cannot open ({})", path_.string(), std::strerror(errno)));
  set_idle();
}

MemoryGate::~MemoryGate() {
  try {
    // What the process keeps goes back before its line does: a process waiting for it would otherwise find no
    // one else on the machine and measure the memory before this one has given it back.
    release_();
    FileLock lock(fd_);
    save(fd_, load_others(fd_, pid_, path_), path_);
  } catch (const std::exception&) {
    // (the line is dropped by the next process that reads the table, this one being gone)
  }
  ::close(fd_);
}

void MemoryGate::set_idle() {
  FileLock lock(fd_);
  std::vector<Entry> es = load_others(fd_, pid_, path_);
  es.push_back(Entry{pid_, start_, "idle"});
  save(fd_, es, path_);
}

MemoryGate::Admission::~Admission() {
  if (!g_) return;
  try {
    g_->set_idle();
  } catch (const std::exception&) {
    // (a table that cannot be written now leaves this process admitted until it exits; others wait for it)
  }
}

MemoryGate::Admission MemoryGate::admit(std::uint64_t need, double* waited_s) {
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t since = 0;  // when this process began to wait (0: it does not)
  for (;;) {
    bool admitted = false, release = false;
    {
      FileLock lock(fd_);
      std::vector<Entry> es = load_others(fd_, pid_, path_);
      const bool others_wait = std::any_of(es.begin(), es.end(), [](const Entry& e) { return e.state == "waiting"; });
      if (others_wait && !released_) {
        release = true;  // first give back what this process keeps (outside the lock), then look again
      } else {
        const std::optional<std::uint64_t> avail = memory_available();
        const bool fixed = memory_overridden();
        std::uint64_t outstanding = 0, ahead = 0;
        bool busy = false;  // another process holds memory that waiting could win back
        for (const Entry& e : es) {
          if (e.state == "admitted") {
            std::uint64_t grown = 0;
            if (!fixed) {
              const std::uint64_t now = resident(e.pid);
              grown = e.kept0 + (now > e.rss0 ? now - e.rss0 : 0);
            }
            outstanding += e.need > grown ? e.need - grown : 0;
          }
          if (e.state != "waiting") busy = true;
          else if (since == 0 || e.since < since || (e.since == since && e.pid < pid_)) ahead += e.need;
        }
        const std::uint64_t free = !avail ? 0 : *avail > outstanding ? *avail - outstanding : 0;
        admitted = !avail || !busy || need + ahead <= free;
        Entry me{pid_, start_, admitted ? "admitted" : "waiting"};
        me.need = need;
        if (admitted) {
          me.rss0 = resident(pid_);
          me.kept0 = memory_kept();
        } else {
          if (since == 0) since = now_ns();
          me.since = since;
          release = !released_;
        }
        es.push_back(me);
        save(fd_, es, path_);
      }
    }
    if (admitted) {
      released_ = false;  // (the point keeps what it frees)
      break;
    }
    if (release) {
      release_();
      released_ = true;
      if (since == 0) continue;  // (it looked at waiting processes: it may be admitted now)
    }
    std::this_thread::sleep_for(kPoll);
  }
  if (waited_s) *waited_s = since ? std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() : 0.0;
  return Admission(this);
}

}  // namespace wafer::apps
