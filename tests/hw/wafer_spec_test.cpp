#include "hw/wafer_spec.h"

#include <gtest/gtest.h>

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
