// traces::Report's JSON form (docs/results.md, schema_version 2): a table is name+unit columns and rows of
// cells; the text summary keeps "name [unit]" headers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "traces/report.h"

namespace wafer::traces {
namespace {

TEST(Report, ColumnHeadersSplitIntoNameAndUnit) {
  EXPECT_EQ(Column::parse("total [cycles]").name, "total");
  EXPECT_EQ(Column::parse("total [cycles]").unit, "cycles");
  EXPECT_EQ(Column::parse("slope [us per unit]").unit, "us per unit");
  EXPECT_EQ(Column::parse("elasticity [% per %]").unit, "% per %");
  EXPECT_EQ(Column::parse("error after [%]").name, "error after");
  EXPECT_EQ(Column::parse("layer").name, "layer");
  EXPECT_EQ(Column::parse("layer").unit, "");
  EXPECT_EQ(Column::parse("a [b] c").name, "a [b] c");  // no trailing bracket: no unit
  for (const char* h : {"total [cycles]", "layer", "share [%]"}) EXPECT_EQ(Column::parse(h).header(), h);
}

TEST(Report, TableIsColumnsAndRowsWithTwoColumnsOfOneName) {
  Report r("t");
  auto& t = r.add_table("per_layer", {"layer", "total [cycles]", "total [us]"});
  t.rows.push_back({std::string("layer 0"), std::int64_t(1100), 1.0});
  t.rows.push_back({std::string("head"), std::int64_t(11), std::nan("")});
  t.rows.push_back({std::string("short")});  // a short row is padded with null
  const nlohmann::json j = results_json(r);
  EXPECT_EQ(j["schema_version"], kResultsSchemaVersion);
  EXPECT_EQ(kResultsSchemaVersion, 2);
  const auto& tj = j["per_layer"];
  ASSERT_TRUE(tj.is_object());
  EXPECT_EQ(tj["columns"], nlohmann::json::parse(R"([{"name": "layer", "unit": ""}, {"name": "total", "unit": "cycles"},
                                                       {"name": "total", "unit": "us"}])"));
  EXPECT_EQ(tj["rows"], nlohmann::json::parse(R"([["layer 0", 1100, 1.0], ["head", 11, null], ["short", null, null]])"));
}

TEST(Report, TextSummaryKeepsNameUnitHeaders) {
  Report r("t");
  r.add_table("per_layer", {"layer", "total [cycles]"}).rows.push_back({std::string("layer 0"), std::int64_t(7)});
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  r.print(f);
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += char(c);
  std::fclose(f);
  EXPECT_NE(text.find("layer 0"), std::string::npos);
  EXPECT_NE(text.find("total [cycles]"), std::string::npos) << text;
}

}  // namespace
}  // namespace wafer::traces
