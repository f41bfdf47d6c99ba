#include "hw/input_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "hw/error.h"

namespace wafer::hw {

namespace {
struct Read {
  std::string path, what;
};
std::mutex mutex;
std::map<std::pair<dev_t, ino_t>, Read>& files() {
  static std::map<std::pair<dev_t, ino_t>, Read> read;
  return read;
}
}  // namespace

void note_input_file(const std::filesystem::path& file, std::string_view what) {
  struct stat st {};
  // (a FIFO too: written as an output it would be waited on for ever, with nothing left to read it)
  if (::stat(file.c_str(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) return;
  const std::lock_guard lock(mutex);
  files().try_emplace({st.st_dev, st.st_ino}, Read{file.string(), std::string(what)});
}

void refuse_overwriting_input(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  const std::lock_guard lock(mutex);
  const auto it = files().find({st.st_dev, st.st_ino});
  if (it != files().end())
    throw InputError(fmt::format("{}: the run read it as a {} ({}): it is not written over", path.string(),
                                 it->second.what, it->second.path));
}

}  // namespace wafer::hw
