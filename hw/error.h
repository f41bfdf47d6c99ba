#pragma once
// Errors a user can act on. Every bad input becomes one InputError whose message is a single line that
// names the problem (key, file, line); the program prints it and exits non-zero.
#include <stdexcept>
#include <string>

namespace wafer::hw {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace wafer::hw
