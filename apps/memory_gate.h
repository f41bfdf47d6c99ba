#pragma once
// Admission of points by memory among the processes that run one study on one host (docs/studies.md
// "Memory"): the workers of `sweep --jobs N`, the ranks of an MPI launcher and the tasks of a job array all
// check a point's task records against the memory available (apps::check_memory) just before they allocate
// them, so two processes that check at once both pass and together run the machine out of memory (the kernel
// then kills one), and a process that checks while another holds memory, or keeps it freed for its next point
// (apps::keep_freed_memory), refuses a point it could run a moment later: results that depended on timing.
//
// A MemoryGate makes that check one at a time and counts what the others have been admitted to allocate. The
// processes share a table, DIR/.memory-<host> (one line a process, rewritten under flock), of their state:
//   idle      between points (it may hold memory it keeps);
//   admitted  running a point of `need` bytes of task records; it had `rss0` resident and `kept0` kept freed
//             when admitted, so of its need it may still allocate need - kept0 - (its resident now - rss0);
//   waiting   waiting for memory, since `since` (it released what it kept before it began).
// admit(need) admits at once when need, and the needs of the processes waiting since earlier, fit in the
// memory available less what the admitted processes may still allocate. Otherwise the process releases what it
// keeps, waits and tries again; a process that sees another waiting releases what it keeps before it is
// admitted. When every other process is waiting or gone, nothing holds memory that waiting could win back,
// and admit returns: the point's own check then runs or refuses it exactly as a process alone on the machine
// would. With WAFER_EMU_MEMORY_MB the memory available is that figure, so an admitted process counts its whole
// need (its growth does not lower the figure).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace wafer::apps {

class MemoryGate {
 public:
  // The table DIR/.memory-<host>; this process is entered idle. `release` frees what the process keeps
  // between points (apps::PointCache::release) and is called before it waits, and at the end, before the
  // process's line leaves the table.
  MemoryGate(const std::filesystem::path& dir, std::function<void()> release);
  ~MemoryGate();
  MemoryGate(const MemoryGate&) = delete;
  MemoryGate& operator=(const MemoryGate&) = delete;

  // Holds an admission until destroyed (then the process is idle again).
  class Admission {
   public:
    explicit Admission(MemoryGate* g) : g_(g) {}
    Admission(Admission&& o) noexcept : g_(o.g_) { o.g_ = nullptr; }
    Admission& operator=(Admission&&) = delete;
    ~Admission();

   private:
    MemoryGate* g_;
  };
  // Blocks until `need` bytes of task records may be allocated (see above); `waited_s` gets the seconds it
  // waited (0 when it was admitted without waiting).
  Admission admit(std::uint64_t need, double* waited_s = nullptr);

  // How many live processes wait for memory in the table of `dir` on this host (0 when there is none): the
  // progress line of `sweep --jobs N` shows it.
  static std::int64_t waiting(const std::filesystem::path& dir);
  // The memory table of the study folder `dir` on this host (.memory-HOST), which the gates of its workers share.
  static std::filesystem::path table(const std::filesystem::path& dir);

 private:
  void set_idle();
  std::filesystem::path path_;
  std::function<void()> release_;
  long pid_;              // this process
  std::uint64_t start_;   // its start time (/proc/PID/stat), which its line carries
  int fd_ = -1;
  bool released_ = false;  // nothing kept since release_ was last called
};

}  // namespace wafer::apps
