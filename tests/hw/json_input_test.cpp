// hw::parse_input_json: the checks every JSON input gets (depth, keys given twice, malformed text, numbers beyond
// a double), on both sides of each rule.
#include <gtest/gtest.h>

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
