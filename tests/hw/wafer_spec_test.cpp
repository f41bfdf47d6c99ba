#include "hw/wafer_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "hw/error.h"

using namespace wafer::hw;

TEST(WaferSpec, PresetsAreValidAndMatchPublicGeometry) {
  std::set<std::string> names;
  for (const auto& n : preset_names()) {
    names.insert(n);
    WaferSpec w = preset(n);
    EXPECT_NO_THROW(validate(w, n));
    EXPECT_EQ(w.name, n);
  }
  EXPECT_EQ(names, (std::set<std::string>{"small", "tiny", "wse2", "wse3"}));
  WaferSpec wse3 = preset("wse3");
  EXPECT_EQ(wse3.logical_width, 762);
  EXPECT_EQ(wse3.logical_height, 1172);
  EXPECT_EQ(wse3.logical_tiles(), 893'064);
  EXPECT_NEAR(double(wse3.physical_tiles()), 970'000, 5'000);
  EXPECT_NEAR(wse3.area_cm2(), 462.25, 1e-6);
  WaferSpec wse2 = preset("wse2");
  EXPECT_EQ(wse2.logical_tiles(), 757 * 996);
  EXPECT_NEAR(double(wse2.physical_tiles()), 850'000, 5'000);
  EXPECT_EQ(preset("tiny").logical_tiles(), 64);
  EXPECT_EQ(preset("small").logical_tiles(), 4096);
}

TEST(WaferSpec, UnknownPresetNamesTheKnownOnes) {
  try {
    preset("wse9");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("wse9"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("wse3"), std::string::npos);
  }
}

TEST(WaferSpec, EveryParameterHasUnitMeaningSourceAndARangeHoldingItsDefaults) {
  for (const auto& p : wafer_params()) {
    EXPECT_FALSE(p.unit.empty()) << p.key;
    EXPECT_FALSE(p.meaning.empty()) << p.key;
    EXPECT_FALSE(p.source.empty()) << p.key;
    EXPECT_LE(p.min, p.max) << p.key;
  }
}

TEST(WaferSpec, ValidateRefusesHugeWafersBeforeAllocating) {
  WaferSpec w = preset("tiny");
  w.logical_width = 8000;
  w.logical_height = 8000;
  EXPECT_THROW(validate(w, "test"), InputError);
  w = preset("tiny");
  w.logical_width = 0;
  EXPECT_THROW(validate(w, "test"), InputError);
  w = preset("tiny");
  w.clock_ghz = -1;
  EXPECT_THROW(validate(w, "test"), InputError);
}

// ramp_latency (core <-> router, each way): a parameter like the others, sourced, 0..1000 cycles, 2 on
// every preset; validate names the key at limit + 1 on both sides.
TEST(WaferSpec, RampLatencyIsASourcedParameter) {
  const ParamInfo* ramp = nullptr;
  for (const auto& p : wafer_params())
    if (p.key == "ramp_latency") ramp = &p;
  ASSERT_NE(ramp, nullptr);
  EXPECT_EQ(ramp->unit, "cycles");
  EXPECT_NE(ramp->source.find("2404.15888"), std::string_view::npos) << ramp->source;
  EXPECT_EQ(ramp->min, 0);
  EXPECT_EQ(ramp->max, 1000);
  for (const auto& n : preset_names()) EXPECT_EQ(preset(n).ramp_latency, 2) << n;
  WaferSpec w = preset("tiny");
  for (std::int64_t ok : {0, 1000}) {
    w.ramp_latency = ok;
    EXPECT_NO_THROW(validate(w, "test")) << ok;
  }
  for (std::int64_t bad : {-1, 1001}) {
    w.ramp_latency = bad;
    try {
      validate(w, "test");
      FAIL() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("'ramp_latency'"), std::string::npos) << e.what();
    }
  }
}

TEST(WaferSpec, ANameIsOneLineOfText) {
  // (it heads the tables and labels: a newline broke decode's and describe's text tables)
  auto named = [](const char* name) {
    nlohmann::json j = nlohmann::json::object();
    j["preset"] = "tiny";
    j["name"] = name;
    return wafer_from_json(j, "w.json", "tiny");
  };
  EXPECT_EQ(named("tiny, repaired").name, "tiny, repaired");
  for (const char* bad : {"a\nb", "tab\there", ""}) {
    try {
      named(bad);
      ADD_FAILURE() << "name " << bad << " taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("w.json: 'name' = "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("must be a non-empty line of text"), std::string::npos) << e.what();
    }
  }
  // It names a folder of table's outputs: a path in it is refused ("../x" wrote outside --out), dots in a name taken.
  EXPECT_EQ(named("wse3.v2").name, "wse3.v2");
  for (const char* bad : {"../../x", "a/b", "a\\b", "..", "."}) {
    try {
      named(bad);
      ADD_FAILURE() << "name " << bad << " taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("names a folder in outputs"), std::string::npos) << e.what();
    }
  }
}
