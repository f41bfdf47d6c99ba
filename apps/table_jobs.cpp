#include "apps/table_jobs.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "apps/cli.h"
#include "apps/memory_gate.h"
#include "apps/point_cache.h"
#include "hw/error.h"
#include "sim/simulator.h"

namespace wafer::apps {

std::vector<std::pair<std::string, hw::Cycle>> op_cycles(const sim::StepResult& r) {
  std::vector<std::pair<std::string, hw::Cycle>> out;
  for (const auto& n : r.per_op) {
    hw::Cycle s = 0;
    for (hw::Cycle v : n.cycles) s += v;
    out.push_back({n.name, s});
  }
  return out;
}

namespace {

// Frames over a stream socket: a 4-byte length, then the message: a type byte, then 8-byte integers and
// strings (a 4-byte length, then the bytes). Both ends are the same binary on the same machine.
bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= std::size_t(w);
  }
  return true;
}
bool read_all(int fd, char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= std::size_t(r);
  }
  return true;
}
bool send_frame(int fd, const std::string& msg) {
  const std::uint32_t n = std::uint32_t(msg.size());
  return write_all(fd, reinterpret_cast<const char*>(&n), sizeof n) && write_all(fd, msg.data(), msg.size());
}
bool recv_frame(int fd, std::string& msg) {
  std::uint32_t n = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&n), sizeof n)) return false;
  msg.resize(n);
  return read_all(fd, msg.data(), n);
}

struct Out {
  std::string s;
  explicit Out(char type) : s(1, type) {}
  void i64(std::int64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(const std::string& v) {
    const std::uint32_t n = std::uint32_t(v.size());
    s.append(reinterpret_cast<const char*>(&n), sizeof n);
    s += v;
  }
};
struct In {
  const std::string& s;
  std::size_t pos = 1;  // after the type byte
  char type() const { return s.empty() ? '\0' : s[0]; }
  void need(std::size_t n) const {
    if (s.size() - pos < n) throw std::runtime_error("a truncated message");
  }
  std::int64_t i64() {
    std::int64_t v = 0;
    need(sizeof v);
    std::memcpy(&v, s.data() + pos, sizeof v);
    pos += sizeof v;
    return v;
  }
  std::string str() {
    std::uint32_t n = 0;
    need(sizeof n);
    std::memcpy(&n, s.data() + pos, sizeof n);
    pos += sizeof n;
    need(n);
    std::string v = s.substr(pos, n);
    pos += n;
    return v;
  }
};

// A worker: steps in ('S' tokens context batch; 'Q' to end), answers out ('R' latency and the operators'
// cycles, 'E' the mapper's or the memory check's refusal; at the end 'T' its figures; 'F' an unexpected
// failure). It never returns into the parent's stack (no destructor of the parent's objects runs here).
[[noreturn]] void worker_main(int fd, const DecodePoint& base, bool cache, const std::filesystem::path& gate_dir) {
  int code = 0;
  try {
    sim::Simulator simulator;
    PointCache points(simulator, cache);
    // The workers take turns for memory (apps/memory_gate.h), so that two large steps are not emulated at once
    // when they do not fit together.
    MemoryGate gate(gate_dir, [&points] { points.release(); });
    const std::shared_ptr<const noc::Fabric> fabric = points.perfect(base.spec);
    DecodePoint dp = base;
    std::int64_t emulated = 0;
    std::string msg;
    for (;;) {
      if (!recv_frame(fd, msg)) ::_exit(1);  // the parent is gone
      In in{msg};
      if (in.type() == 'Q') {
        Out o('T');
        o.i64(emulated), o.i64(points.stats().mappings_reused), o.i64(points.stats().mappings_built);
        o.i64(points.stats().meshes_reused);
        if (!send_frame(fd, o.s)) ::_exit(1);
        break;
      }
      if (in.type() != 'S') throw std::runtime_error("an unknown message from the parent");
      dp.options.tokens = in.i64(), dp.options.context = in.i64(), dp.options.batch = in.i64();
      std::string answer;
      try {
        const std::shared_ptr<const mapper::Mapping> m = points.map(dp, fabric);
        const MemoryGate::Admission admission = gate.admit(step_records(*m, dp.threads));
        const sim::StepResult r = points.emulate(dp, *fabric, *m);
        ++emulated;
        Out o('R');
        o.i64(std::int64_t(r.latency));
        const auto ops = op_cycles(r);
        o.i64(std::int64_t(ops.size()));
        for (const auto& [name, c] : ops) o.str(name), o.i64(std::int64_t(c));
        answer = std::move(o.s);
      } catch (const hw::InputError& e) {
        Out o('E');
        o.str(e.what());
        answer = std::move(o.s);
      }
      if (!send_frame(fd, answer)) ::_exit(1);
    }
  } catch (const std::exception& e) {
    Out o('F');
    o.str(e.what());
    send_frame(fd, o.s);
    code = 3;
  } catch (...) {
    Out o('F');
    o.str("an unknown exception");
    send_frame(fd, o.s);
    code = 3;
  }
  ::_exit(code);
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

StepWorkers::StepWorkers(int jobs, const DecodePoint& base, bool cache) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  // The workers' memory table (apps::MemoryGate) in a folder of this run's own, named with this process's id:
  // the folders of runs whose process is gone (stopped by a signal before they removed theirs) are removed first.
  {
    std::error_code ec;
    const std::string prefix = "wafer-emu-table-";
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) != 0 || !e.is_directory(ec)) continue;
      const std::string rest = name.substr(prefix.size());
      const std::size_t dash = rest.find('-');
      long pid = 0;
      const auto [end, err] = std::from_chars(rest.data(), rest.data() + (dash == std::string::npos ? 0 : dash), pid);
      if (err != std::errc() || end != rest.data() + dash || pid <= 0) continue;
      if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH) std::filesystem::remove_all(e.path(), ec);
    }
  }
  std::string tmpl =
      (std::filesystem::temp_directory_path() / fmt::format("wafer-emu-table-{}-XXXXXX", ::getpid())).string();
  if (!::mkdtemp(tmpl.data()))
    throw hw::InputError(fmt::format("--jobs {}: cannot make a folder for the workers in {} ({})", jobs,
                                     std::filesystem::temp_directory_path().string(), std::strerror(errno)));
  gate_dir_ = tmpl;
  for (int k = 0; k < jobs; ++k) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
      kill_all();
      throw hw::InputError(fmt::format("--jobs {}: cannot make a socket for a worker ({})", jobs, std::strerror(errno)));
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int e = errno;
      ::close(sv[0]), ::close(sv[1]);
      kill_all();
      throw hw::InputError(fmt::format("--jobs {}: cannot start worker {} ({})", jobs, k + 1, std::strerror(e)));
    }
    if (pid == 0) {
#if defined(__linux__)
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no worker outlives the parent
#endif
      if (::getppid() != parent) ::_exit(1);
      ::close(sv[0]);
      for (const Worker& w : workers_) ::close(w.fd);
      worker_main(sv[1], base, cache, gate_dir_);
    }
    ::close(sv[1]);
    Worker w;
    w.pid = pid, w.fd = sv[0];
    workers_.push_back(w);
  }
}

StepWorkers::~StepWorkers() { kill_all(); }

void StepWorkers::kill_all() {
  for (Worker& w : workers_) {
    if (w.pid > 0) {
      ::kill(w.pid, SIGKILL);
      while (::waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      w.pid = -1;
    }
    if (w.fd >= 0) ::close(w.fd), w.fd = -1;
  }
  std::error_code ec;  // (the workers' memory table goes with them)
  if (!gate_dir_.empty()) std::filesystem::remove_all(gate_dir_, ec);
}

void StepWorkers::fail(std::size_t k, const std::string& what) {
  Worker& w = workers_[k];
  const pid_t pid = w.pid;
  std::string status;
  if (what.empty() && w.pid > 0) {  // its socket closed: it is ending, its status says how
    int st = 0;
    pid_t r;
    while ((r = ::waitpid(w.pid, &st, 0)) < 0 && errno == EINTR) {
    }
    if (r == w.pid) w.pid = -1, status = describe_status(st);
  }
  const std::string during =
      w.running ? fmt::format(" while emulating {} tokens at context {}, batch {}", std::get<0>(w.step), std::get<1>(w.step),
                              std::get<2>(w.step))
                : std::string();
  const std::string msg = fmt::format("--jobs: worker {} of {} (pid {}) {}{}; nothing written", k + 1, workers_.size(),
                                      pid, what.empty() ? (status.empty() ? "died" : status) : what,
                                      during);
  kill_all();
  throw WorkerFailure(one_line(msg));
}

void StepWorkers::submit(const StepKey& key) { queue_.push_back(key); }

bool StepWorkers::busy() const {
  return !queue_.empty() || std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; });
}

void StepWorkers::poll(int timeout_ms, const std::function<void(const StepKey&, StepOutcome)>& on_done) {
  auto dispatch = [&] {
    for (std::size_t k = 0; k < workers_.size() && !queue_.empty(); ++k) {
      Worker& w = workers_[k];
      if (w.running) continue;
      w.step = queue_.front();
      queue_.pop_front();
      w.running = true;
      Out o('S');
      o.i64(std::get<0>(w.step)), o.i64(std::get<1>(w.step)), o.i64(std::get<2>(w.step));
      if (!send_frame(w.fd, o.s)) fail(k, "");
    }
  };
  dispatch();
  if (!busy()) return;
  std::vector<pollfd> fds;
  for (const Worker& w : workers_) fds.push_back(pollfd{w.fd, POLLIN, 0});
  const int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0 && errno != EINTR) throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
  for (std::size_t k = 0; n > 0 && k < workers_.size(); ++k) {
    if (fds[k].revents == 0) continue;
    Worker& w = workers_[k];
    std::string msg;
    if (!recv_frame(w.fd, msg)) fail(k, "");
    In in{msg};
    StepOutcome o;
    try {
      if (in.type() == 'F') fail(k, fmt::format("failed: {}", in.str()));
      if (!w.running || (in.type() != 'R' && in.type() != 'E')) fail(k, "sent an unexpected message");
      if (in.type() == 'E') {
        o.error = in.str();
      } else {
        o.latency = hw::Cycle(in.i64());
        const std::int64_t ops = in.i64();
        for (std::int64_t i = 0; i < ops; ++i) {
          std::string name = in.str();
          o.ops.push_back({std::move(name), hw::Cycle(in.i64())});
        }
      }
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const hw::InputError*>(&e)) throw;
      fail(k, fmt::format("sent {}", e.what()));
    }
    w.running = false;
    on_done(w.step, std::move(o));
  }
  dispatch();
}

StepWorkers::Stats StepWorkers::finish() {
  if (busy()) throw std::logic_error("StepWorkers::finish: steps are still queued or running");
  Stats s;
  for (std::size_t k = 0; k < workers_.size(); ++k) {
    Worker& w = workers_[k];
    std::string msg;
    if (!send_frame(w.fd, Out('Q').s) || !recv_frame(w.fd, msg)) fail(k, "");
    In in{msg};
    if (in.type() != 'T') fail(k, "sent an unexpected message");
    try {
      s.steps_emulated += in.i64(), s.mappings_reused += in.i64(), s.mappings_built += in.i64(), s.meshes_reused += in.i64();
    } catch (const std::runtime_error& e) {
      fail(k, fmt::format("sent {}", e.what()));
    }
    int st = 0;
    pid_t r;
    while ((r = ::waitpid(w.pid, &st, 0)) < 0 && errno == EINTR) {
    }
    w.pid = -1;
    ::close(w.fd), w.fd = -1;
    if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      kill_all();
      throw WorkerFailure(fmt::format("--jobs: worker {} of {} {} at the end; nothing written", k + 1, workers_.size(),
                                       describe_status(st)));
    }
  }
  return s;
}

}  // namespace wafer::apps
