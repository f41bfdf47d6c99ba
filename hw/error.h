#pragma once
// Errors a user can act on. Every bad input becomes one InputError whose message is a single line that
// names the problem (key, file, line); the program prints it and exits non-zero.
#include <stdexcept>
#include <string>

namespace wafer::hw {

// Whether `c` is a control character (below 0x20, or DEL): what a name shown in a table or a label may not hold.
inline bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// `text` with its control characters written as escapes (\n, \r, \t, \0, \xNN) and DEL as \x7f: a value an input
// gave (a name holding a newline, a NUL byte) then keeps a message on one line and whole.
inline std::string one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (!is_control(ch)) {
      out += ch;
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\0': out += "\\0"; break;
      default: out += "\\x", out += kHex[c >> 4], out += kHex[c & 15];
    }
  }
  return out;
}

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(one_line(what)) {}
};

}  // namespace wafer::hw
