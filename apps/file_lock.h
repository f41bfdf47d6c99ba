#pragma once
// An exclusive flock(2) on an open file, held for the object's life (retried when a signal interrupts it):
// the processes of one study take it on DIR/points.jsonl and on their memory table (apps::MemoryGate).
#include <fmt/format.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace wafer::apps {

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
