// hw::parse_input_json: the checks every JSON input gets (depth, keys given twice, malformed text, numbers beyond
// a double), on both sides of each rule.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "hw/error.h"
#include "hw/json_input.h"

namespace wafer::hw {
namespace {

std::string refusal(const std::string& text) {
  try {
    parse_input_json<nlohmann::json>(text, "f.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// read_input_file on both sides of its byte limit, and on a folder and a device.
TEST(InputFile, ReadsUpToItsLimitAndRefusesMoreAFolderAndADevice) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("wafer-input-file-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto file_of = [&](std::size_t bytes) {
    const std::filesystem::path f = dir / ("f" + std::to_string(bytes));
    std::ofstream(f, std::ios::binary) << std::string(bytes, 'x');
    return f;
  };
  auto refused = [](const std::filesystem::path& f, std::uint64_t limit) {
    try {
      read_input_file(f, "model config", limit);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(read_input_file(file_of(3u << 20), "model config", 3u << 20).size(), std::size_t(3) << 20);
  EXPECT_NE(refused(file_of((3u << 20) + 1), 3u << 20).find("more than 3 MiB: too large for a model config"), std::string::npos);
  EXPECT_NE(refused(dir, 3u << 20).find("is a folder, not a model config"), std::string::npos);
  EXPECT_NE(refused("/dev/null", 3u << 20).find("/dev/null: is a device, not a model config"), std::string::npos);
  EXPECT_NE(refused(dir / "none", 3u << 20).find("cannot open model config"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(InputJson, NestsUpToItsLimitAndNoDeeper) {
  const int n = kMaxInputDepth;
  const nlohmann::json j = parse_input_json<nlohmann::json>(std::string(n, '[') + std::string(n, ']'), "f.json");
  EXPECT_TRUE(j.is_array());
  EXPECT_EQ(refusal(std::string(n + 1, '[') + std::string(n + 1, ']')), "f.json: JSON nested deeper than 256 levels (refused)");
  // Objects and arrays count alike.
  std::string mixed;
  for (int i = 0; i <= n; ++i) mixed += i % 2 ? "[" : "{\"k\":";
  for (int i = n; i >= 0; --i) mixed += i % 2 ? "]" : "}";
  EXPECT_NE(refusal(mixed).find("nested deeper"), std::string::npos);
}

TEST(InputJson, AKeyTwiceInOneObjectIsRefusedInSiblingsTaken) {
  EXPECT_EQ(refusal(R"({"a": {"x": 1, "y": {"x": 2}, "x": 3}})"), "f.json: key 'x' is given twice in one object");
  EXPECT_EQ(refusal(R"([{"x": 1}, {"x": 2}, {"y": {"x": 3}}])"), "");
  EXPECT_EQ(refusal(R"({"x": 1, "x": 1})"), "f.json: key 'x' is given twice in one object");
  // The first repeated key is named.
  EXPECT_EQ(refusal(R"({"b": 1, "b": 2, "a": 1, "a": 2})"), "f.json: key 'b' is given twice in one object");
}

TEST(InputJson, MalformedTextAndNumbersBeyondADouble) {
  EXPECT_EQ(refusal(R"({"x": 1,})"), "f.json: malformed JSON at byte 9");
  EXPECT_EQ(refusal(""), "f.json: malformed JSON at byte 1");
  EXPECT_EQ(refusal("1e308"), "");
  EXPECT_EQ(refusal("1e309"), "f.json: malformed JSON: a number beyond the range of a double");
  // A parse error wins over a repeated key before it.
  EXPECT_EQ(refusal(R"({"x": 1, "x": 2)"), "f.json: malformed JSON at byte 16");
  // A large document parses whole (a SAX pass, then the document: both linear in its size).
  std::string many = "[";
  for (int i = 0; i < 200000; ++i) many += (i ? "," : "") + std::string(R"({"x":1,"y":2})");
  many += "]";
  EXPECT_EQ(parse_input_json<nlohmann::ordered_json>(many, "f.json").size(), 200000u);
}

}  // namespace
}  // namespace wafer::hw
