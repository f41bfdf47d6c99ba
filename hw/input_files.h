#pragma once
// The files a run has read as inputs (hw::read_input_file: model configs, wafer files, defect maps, studies, case
// files, results), so that no output of the run is written over one of them, however it was named: a shipped
// model's name, a path inside a study or case file, a link (apps' check_apart compares the paths the options give
// before the run; this catches the rest when an output is written).
#include <filesystem>
#include <string_view>

namespace wafer::hw {

// Notes that `file` was read as `what` ("model config", ...). Thread-safe.
void note_input_file(const std::filesystem::path& file, std::string_view what);
// InputError "PATH: the run read it as a WHAT (READ): it is not written over" when `path` is a file the run has
// read (the same file: device and inode); nothing when it does not exist yet or was not read. Thread-safe.
void refuse_overwriting_input(const std::filesystem::path& path);

}  // namespace wafer::hw
