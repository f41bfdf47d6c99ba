#pragma once
// An exclusive flock(2) on an open file, held for the object's life (retried when a signal interrupts it):
// the processes of one study take it on DIR/points.jsonl and on their memory table (apps::MemoryGate), and
// read what the others wrote with read_from.
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace wafer::apps {

// The bytes of an open file from `offset` to its end (pread, so the file offset stays); `path` names it in the
// error a failed read throws.
inline std::string read_from(int fd, off_t offset, const std::string& path) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof(buf), offset + off_t(text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(fmt::format("{}: read: {}", path, std::strerror(errno)));
    if (n == 0) return text;
    text.append(buf, std::size_t(n));
  }
}

class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) throw std::runtime_error(fmt::format("flock: {}", std::strerror(errno)));
  }
  ~FileLock() { flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace wafer::apps
