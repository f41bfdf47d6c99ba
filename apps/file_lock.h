#pragma once
// An exclusive flock(2) on an open file, held for the object's life (retried when a signal interrupts it):
// the processes of one study take it on DIR/points.jsonl and on their memory table (apps::MemoryGate), and
// read what the others wrote with read_from; write_all appends a line whole (there and in a table's journal).
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace wafer::apps {

// Whether an open descriptor is a regular file: what a study's points, a journal or a file hashed to resume must be
// (a device was read until the memory ran out, a FIFO failed to seek or could not be read again).
inline bool regular_file(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

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

// Writes all of `text` at the file's offset (a line appended whole, retried when a signal interrupts a write):
// 0, or the errno of the write that failed (the caller words the error).
inline int write_all(int fd, const std::string& text) {
  for (std::size_t put = 0; put < text.size();) {
    const ssize_t n = ::write(fd, text.data() + put, text.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    put += std::size_t(n);
  }
  return 0;
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
