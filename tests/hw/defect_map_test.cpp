// Defect maps: storage rules, the generators' statistics and determinism, CSV/JSON files and bad files.
#include "hw/defect_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <system_error>
#include <vector>
#include <unistd.h>

#include "hw/error.h"
#include "hw/random.h"
#include "hw/yield.h"
#include "test_util.h"

using namespace wafer::hw;
using wafer::hw::testing::custom_wafer;
using wafer::hw::testing::per_wafer;

namespace {

// The folders the tests write their files in, removed when the test program ends (one per test).
struct TempDirs {
  std::vector<std::filesystem::path> made;
  ~TempDirs() {
    for (const auto& d : made) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};
TempDirs temp_dirs;

std::filesystem::path temp_dir() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');  // (a parameterised test's name is Name/N)
  auto d = std::filesystem::temp_directory_path() / ("wafer_defects_test_" + std::to_string(::getpid()) + "_" + name);
  if (std::filesystem::create_directories(d)) temp_dirs.made.push_back(d);
  return d;
}

std::filesystem::path write_file(const std::string& name, const std::string& text) {
  auto p = temp_dir() / name;
  std::ofstream(p) << text;
  return p;
}

// Sample mean, variance, and the standard error of the variance (from the fourth moment).
struct Sample {
  double mean = 0, var = 0, var_se = 0;
};
Sample sample(const std::vector<double>& x) {
  const double n = double(x.size());
  Sample s;
  s.mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double m2 = 0, m4 = 0;
  for (double v : x) {
    const double d = v - s.mean;
    m2 += d * d, m4 += d * d * d * d;
  }
  s.var = m2 / (n - 1);
  m4 /= n;
  s.var_se = std::sqrt(std::max(0.0, m4 - (m2 / n) * (m2 / n)) / n);
  return s;
}

}  // namespace

TEST(DefectMap, AddChecksRangeLinksAndDuplicates) {
  DefectMap m(Grid{4, 3});
  m.add({DefectKind::Core, {1, 1}});
  m.add({DefectKind::Sram, {1, 1}});  // another kind on the same tile: a second defect, one dead tile
  EXPECT_EQ(m.dead_tiles(), 1u);
  EXPECT_TRUE(m.tile_failed(m.grid().index({1, 1})));
  EXPECT_FALSE(m.router_failed(m.grid().index({1, 1})));
  m.add({DefectKind::Router, {3, 2}});
  EXPECT_TRUE(m.router_failed(m.grid().index({3, 2})));
  EXPECT_TRUE(m.tile_failed(m.grid().index({3, 2})));
  m.add({DefectKind::Link, {2, 1}, Dir::West});  // canonicalised to (1,1) East
  EXPECT_EQ(m.defects().back(), (Defect{DefectKind::Link, {1, 1}, Dir::East}));
  EXPECT_TRUE(m.link_failed({1, 1}, Dir::East));
  EXPECT_TRUE(m.link_failed({2, 1}, Dir::West));
  EXPECT_FALSE(m.link_failed({1, 1}, Dir::South));
  EXPECT_TRUE(m.link_failed({3, 0}, Dir::East));  // leaves the grid
  EXPECT_THROW(m.add({DefectKind::Core, {1, 1}}, "f.csv:3"), InputError);
  EXPECT_THROW(m.add({DefectKind::Link, {1, 1}, Dir::East}), InputError);
  EXPECT_THROW(m.add({DefectKind::Link, {2, 1}, Dir::West}), InputError);  // the same link, other spelling
  EXPECT_THROW(m.add({DefectKind::Core, {4, 0}}), InputError);
  EXPECT_THROW(m.add({DefectKind::Core, {0, -1}}), InputError);
  EXPECT_THROW(m.add({DefectKind::Link, {3, 0}, Dir::East}), InputError);
  EXPECT_THROW(m.add({DefectKind::Link, {0, 0}, Dir::North}), InputError);
  try {
    m.add({DefectKind::Core, {1, 1}}, "f.csv:3");
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "f.csv:3: duplicate core defect at (1, 1)");
  }
  EXPECT_EQ(m.size(), 4u);
}

TEST(DefectGen, SameSeedSameMapDifferentSeedDifferentMap) {
  const WaferSpec s = preset("small");
  for (auto model : {DefectModel::Poisson, DefectModel::NegBinomial}) {
    const auto p = per_wafer(s, 30, model);
    const DefectMap a = generate_defects(s, p, 7), b = generate_defects(s, p, 7), c = generate_defects(s, p, 8);
    EXPECT_EQ(a.defects(), b.defects());
    EXPECT_GT(a.size() + c.size(), 0u);
    EXPECT_NE(a.defects(), c.defects());
  }
}

TEST(DefectGen, KindsSharesAndLinksStayInside) {
  const WaferSpec s = custom_wafer(5, 4, 1, 1);  // 6 x 5 physical: links on the edges matter
  const auto p = per_wafer(s, 8);
  std::array<double, 4> n{};
  double total = 0;
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    const DefectMap m = generate_defects(s, p, seed);
    for (const auto& d : m.defects()) {
      ASSERT_TRUE(m.grid().inside(d.at));
      if (d.kind == DefectKind::Link) {
        ASSERT_TRUE(d.dir == Dir::East || d.dir == Dir::South);
        ASSERT_TRUE(m.grid().inside(step(d.at, d.dir)));
      }
      ++n[std::size_t(d.kind)], ++total;
    }
  }
  // Shares 0.45 core, 0.1 router, 0.35 SRAM, 0.1 link, within 5 binomial standard errors (merges are rare
  // here but favour links slightly: 49 links against 30 tiles).
  const double share[4] = {0.45, 0.1, 0.35, 0.1};
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(n[std::size_t(k)] / total, share[k], 5 * std::sqrt(share[k] * (1 - share[k]) / total) + 0.01) << k;
}

// Poisson model: each element fails independently with probability 1 - exp(-mean per element) (merged
// draws), so the number of defects in a map is a sum of independent Bernoullis: exact mean and variance.
TEST(DefectGen, PoissonCountsMatchTheModel) {
  const WaferSpec s = preset("small");
  const double per = 20;
  const auto p = per_wafer(s, per);
  const Grid g = s.physical();
  const double tiles = double(g.size()), links = double((g.width - 1) * g.height + g.width * (g.height - 1));
  double mean = 0, var = 0;
  for (auto [share, slots] : {std::pair{0.45, tiles}, {0.35, tiles}, {0.1, tiles}, {0.1, links}}) {
    const double q = -std::expm1(-per * share / slots);
    mean += slots * q, var += slots * q * (1 - q);
  }
  EXPECT_NEAR(mean, per, 0.05);  // merges are rare: the raw Poisson formula holds too
  std::vector<double> counts;
  const int maps = 3000;
  int zero = 0;
  for (int i = 0; i < maps; ++i) {
    counts.push_back(double(generate_defects(s, p, derive_seed(11, std::uint64_t(i))).size()));
    zero += counts.back() == 0;
  }
  const Sample x = sample(counts);
  EXPECT_NEAR(x.mean, mean, 4 * std::sqrt(var / maps));
  EXPECT_NEAR(x.var, var, 4 * x.var_se);
  EXPECT_EQ(zero, 0);  // P(0) = exp(-20): never in 3000 maps
}

TEST(DefectGen, NegativeBinomialCountsMatchTheModel) {
  const WaferSpec s = preset("small");
  const double per = 10, alpha = 2;
  const auto p = per_wafer(s, per, DefectModel::NegBinomial, alpha);
  std::vector<double> counts;
  const int maps = 4000;
  for (int i = 0; i < maps; ++i) counts.push_back(double(generate_defects(s, p, derive_seed(12, std::uint64_t(i))).size()));
  const Sample x = sample(counts);
  const double var = per + per * per / alpha;  // 60, against 10 for Poisson: the check separates the models
  EXPECT_NEAR(x.mean, per, 4 * std::sqrt(var / maps) + 0.02);  // + the merge bias (~0.01 defect per map)
  EXPECT_NEAR(x.var, var, 4 * x.var_se);
}

TEST(DefectGen, ZeroDefectYieldMatchesAnalytic) {
  const WaferSpec s = preset("tiny");
  const int maps = 4000;
  for (auto model : {DefectModel::Poisson, DefectModel::NegBinomial}) {
    const auto p = per_wafer(s, 1.0, model, 2.0);
    int zero = 0;
    for (int i = 0; i < maps; ++i) zero += generate_defects(s, p, derive_seed(13, std::uint64_t(i))).size() == 0;
    const double y = zero_defect_yield(s, p);  // exp(-1) = 0.368 or (1 + 1/2)^-2 = 0.444
    EXPECT_NEAR(y, model == DefectModel::Poisson ? std::exp(-1.0) : 1.0 / 2.25, 1e-9);
    EXPECT_NEAR(double(zero) / maps, y, 4 * std::sqrt(y * (1 - y) / maps)) << to_string(model);
  }
}

TEST(DefectGen, RejectsBadParameters) {
  const WaferSpec s = preset("tiny");
  DefectGenParams p;
  p.density_per_cm2 = -0.1;
  EXPECT_THROW(generate_defects(s, p, 1), InputError);
  p.density_per_cm2 = std::nan("");
  EXPECT_THROW(generate_defects(s, p, 1), InputError);
  p.density_per_cm2 = INFINITY;
  EXPECT_THROW(generate_defects(s, p, 1), InputError);
  p.density_per_cm2 = 1e9;  // more defects than tiles: absurd
  EXPECT_THROW(generate_defects(s, p, 1), InputError);
  p = {};
  p.alpha = 0;
  EXPECT_THROW(generate_defects(s, p, 1), InputError);
  p.alpha = -2;
  EXPECT_THROW(generate_defects(s, p, 1), InputError);
  p.alpha = std::nan("");
  EXPECT_THROW(generate_defects(s, p, 1), InputError);
  p = {};
  p.share_core = p.share_sram = p.share_router = p.share_link = 0;
  EXPECT_THROW(generate_defects(s, p, 1), InputError);
  p = {};
  p.density_per_cm2 = 0;
  EXPECT_EQ(generate_defects(s, p, 1).size(), 0u);
  EXPECT_THROW(parse_defect_model("gauss"), InputError);
  EXPECT_EQ(parse_defect_model("negbin"), DefectModel::NegBinomial);
}

TEST(DefectFiles, RoundTripCsvAndJson) {
  const WaferSpec s = preset("small");
  const DefectMap m = generate_defects(s, per_wafer(s, 60), 5);
  ASSERT_GT(m.count(DefectKind::Link), 0u);
  ASSERT_GT(m.count(DefectKind::Router), 0u);
  for (const char* name : {"map.csv", "map.json", "MAP.JSON"}) {
    const auto path = write_file(name, format_defects(name, m));
    const DefectMap back = read_defects(path, s);
    EXPECT_EQ(back.defects(), m.defects()) << name;
    EXPECT_EQ(back.dead_tiles(), m.dead_tiles());
  }
  // (the format is the extension's, in any case; writing the file is apps/'s: cli.stream_outputs)
  EXPECT_EQ(format_defects("MAP.JSON", m), format_defects("x.json", m));
  EXPECT_NE(format_defects("map.csv", m), format_defects("map.json", m));
  EXPECT_THROW(format_defects("map.txt", m), InputError);
  EXPECT_THROW(format_defects("map", m), InputError);
}

TEST(DefectFiles, ANameEndingInNeitherIsReadByItsContent) {
  // (a pipe, `--defects <(...)`, has no extension: its content decides; a name's extension decides over content)
  const WaferSpec s = preset("small");
  const DefectMap m = generate_defects(s, per_wafer(s, 60), 5);
  for (const char* format : {"x.csv", "x.json"})
    for (const char* name : {"map", "map.txt"}) {
      const DefectMap back = read_defects(write_file(name, format_defects(format, m)), s);
      EXPECT_EQ(back.defects(), m.defects()) << format << " as " << name;
    }
  EXPECT_THROW(read_defects(write_file("map.csv", format_defects("x.json", m)), s), InputError);
  EXPECT_THROW(read_defects(write_file("map.json", format_defects("x.csv", m)), s), InputError);
}

TEST(DefectFiles, AFolderIsNotAMap) {
  // (a folder opens as an empty stream, which read as a map without defects)
  for (const char* name : {"folder.csv", "folder.json"}) {
    const auto dir = temp_dir() / name;
    std::filesystem::create_directories(dir);
    try {
      read_defects(dir, preset("tiny"));
      ADD_FAILURE() << name << " read as a map";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("is a folder, not a defect map"), std::string::npos) << e.what();
    }
  }
}

TEST(DefectFiles, CsvAcceptsCommentsBlankLinesAndNoHeader) {
  const WaferSpec s = preset("tiny");  // 9 x 9 physical
  const auto p = write_file("ok.csv", "# a comment\n\ncore,1,2\n Router , 3 , 4 \nlink,8,0,W\nlink,0,1,N\r\nsram,0,0,\n");
  const DefectMap m = read_defects(p, s);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m.defects()[1], (Defect{DefectKind::Router, {3, 4}, Dir::East}));
  EXPECT_EQ(m.defects()[2], (Defect{DefectKind::Link, {7, 0}, Dir::East}));
  EXPECT_EQ(m.defects()[3], (Defect{DefectKind::Link, {0, 0}, Dir::South}));
}

TEST(DefectFiles, MissingFileAndEmptyFile) {
  const WaferSpec s = preset("tiny");
  EXPECT_THROW(read_defects(temp_dir() / "nope.csv", s), InputError);
  EXPECT_EQ(read_defects(write_file("empty.csv", "kind,x,y,dir\n"), s).size(), 0u);
}

struct BadFile {
  std::string name, text, error;  // error: substrings the message must hold, in order, separated by ".*"
};

class BadDefectFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadDefectFile, IsRejectedWithALineNamingTheProblem) {
  const WaferSpec s = preset("tiny");  // physical 9 x 9
  const auto& b = GetParam();
  const auto path = write_file(b.name, b.text);
  try {
    read_defects(path, s);
    FAIL() << "accepted " << b.name;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    std::size_t at = 0, from = 0;
    for (;;) {  // each ".*"-separated part of b.error appears in msg, in order
      const std::size_t sep = b.error.find(".*", from);
      const std::string part = b.error.substr(from, sep == std::string::npos ? std::string::npos : sep - from);
      at = msg.find(part, at);
      ASSERT_NE(at, std::string::npos) << "'" << part << "' not in: " << msg;
      at += part.size();
      if (sep == std::string::npos) break;
      from = sep + 2;
    }
    EXPECT_NE(msg.find(b.name), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadDefectFile,
    ::testing::Values(
        BadFile{"out_of_range.csv", "kind,x,y,dir\ncore,1,1\ncore,9,0\n", ":3: core defect at (9, 0) is outside"},
        BadFile{"negative.csv", "kind,x,y,dir\nsram,-1,0\n", ":2: sram defect at (-1, 0) is outside"},
        BadFile{"duplicate.csv", "kind,x,y,dir\ncore,1,1\nrouter,1,1\ncore,1,1\n", ":4: duplicate core defect at (1, 1)"},
        BadFile{"duplicate_link.csv", "link,1,1,E\nlink,2,1,W\n", ":2: duplicate link defect"},
        BadFile{"unknown_kind.csv", "kind,x,y,dir\ncpu,1,1\n", ":2: unknown defect kind 'cpu'"},
        BadFile{"garbage.csv", "kind,x,y,dir\nhello world\n", ":2: expected 'kind,x,y[,dir]'"},
        BadFile{"not_int.csv", "core,1.5,2\n", ":1: x '1.5' is not an integer"},
        BadFile{"bad_y.csv", "core,1,\n", ":1: y '' is not an integer"},
        BadFile{"too_many.csv", "core,1,2,E,5\n", ":1: expected"},
        BadFile{"link_leaves.csv", "link,8,3,E\n", ":1: link defect at (8, 3) towards E leaves the physical grid"},
        BadFile{"link_no_dir.csv", "link,3,3\n", ":1: a link defect needs a direction"},
        BadFile{"link_bad_dir.csv", "link,3,3,X\n", ":1: unknown direction 'X'"},
        BadFile{"core_dir.csv", "core,3,3,E\n", ":1: a core defect takes no direction"},
        BadFile{"bad_header.csv", "kind,x,z\n", ":1: bad header"},
        BadFile{"malformed.json", "{\"defects\": [", "malformed JSON"},
        BadFile{"not_object.json", "[1, 2]", "a defect map is a JSON object"},
        BadFile{"unknown_key.json", "{\"defects\": [], \"defect\": 1}", "unknown key 'defect'"},
        BadFile{"missing_defects.json", "{}", "missing required field 'defects'"},
        BadFile{"defects_not_array.json", "{\"defects\": 3}", "'defects' must be an array"},
        BadFile{"entry_range.json", "{\"defects\": [{\"kind\": \"core\", \"x\": 1, \"y\": 1}, {\"kind\": \"core\", \"x\": 1, \"y\": 99}]}",
                "defects[1]: core defect at (1, 99) is outside"},
        BadFile{"entry_dup.json", "{\"defects\": [{\"kind\": \"sram\", \"x\": 1, \"y\": 1}, {\"kind\": \"sram\", \"x\": 1, \"y\": 1}]}",
                "defects[1]: duplicate sram defect"},
        BadFile{"entry_kind.json", "{\"defects\": [{\"kind\": \"gpu\", \"x\": 1, \"y\": 1}]}", "defects[0]: unknown defect kind \"gpu\""},
        BadFile{"entry_key.json", "{\"defects\": [{\"kind\": \"core\", \"x\": 1, \"y\": 1, \"z\": 0}]}", "defects[0]: unknown key 'z'"},
        BadFile{"entry_missing.json", "{\"defects\": [{\"kind\": \"core\", \"x\": 1}]}", "defects[0]: missing required field 'y'"},
        BadFile{"entry_type.json", "{\"defects\": [{\"kind\": \"core\", \"x\": 1.5, \"y\": 1}]}", "defects[0]: 'x' must be an integer"},
        BadFile{"entry_link.json", "{\"defects\": [{\"kind\": \"link\", \"x\": 0, \"y\": 8, \"dir\": \"S\"}]}", "defects[0]: link defect .* leaves"},
        BadFile{"entry_garbage.json", "{\"defects\": [\"core,1,1\"]}", "defects[0]: an entry is an object"},
        BadFile{"grid_mismatch.json", "{\"grid\": {\"width\": 10, \"height\": 9}, \"defects\": []}", "grid 10 x 9 does not match"},
        // (2^64 - 1 read as an int64 is -1: the message named (-1, 1))
        BadFile{"entry_huge.json", "{\"defects\": [{\"kind\": \"core\", \"x\": 18446744073709551615, \"y\": 1}]}",
                "defects[0]: 'x' must be an integer, got 18446744073709551615"},
        BadFile{"grid_huge.json", "{\"grid\": {\"width\": 18446744073709551615, \"height\": 9}, \"defects\": []}",
                "'grid' must be"},
        BadFile{"too_deep.json", std::string(300, '[') + std::string(300, ']'), "nested deeper than 256 levels"},
        BadFile{"huge_number.json", "{\"defects\": [], \"grid\": 1e400}", "malformed JSON: a number beyond"},
        // A map of another wafer: the grid line format_defects writes (a CSV map's "grid", as a JSON map's).
        BadFile{"other_grid.csv", "# wafer-emu defect map: physical grid 66 x 66, 0 defects\nkind,x,y,dir\n",
                ":1: the map is of a physical grid 66 x 66, the wafer's is 9 x 9"},
        BadFile{"cut_short.csv", "", "the file is empty"},
        BadFile{"nul.csv", std::string("core,1,1\0\n", 10), ":1: y '1\\0' is not an integer"},
        // (a name ending in neither: its content decides, and a CSV map's errors are a CSV map's)
        BadFile{"neither.txt", "core,1,1\nrouter,1\n", ":2: expected 'kind,x,y[,dir]'"},
        BadFile{"neither_json.txt", " \n{\"defects\": 3}", "'defects' must be an array"}),
    [](const ::testing::TestParamInfo<BadFile>& param_info) {
      std::string n = param_info.param.name;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// Every InputError is one line holding its whole text: a value an input gave with a newline or a NUL byte in it
// (a model_type, a defect line) is written as an escape (it split the message over lines, or cut it short).
TEST(InputErrors, KeepOneLineAndTheirWholeText) {
  const std::string raw = std::string("model_type 'llama\nsecond\r\tx\x01") + '\0' + "tail'\x7f";
  const InputError e(raw);
  EXPECT_EQ(std::string(e.what()), "model_type 'llama\\nsecond\\r\\tx\\x01\\0tail'\\x7f");
  EXPECT_EQ(one_line("plain text, \xc2\xb5s and all"), "plain text, \xc2\xb5s and all");  // (UTF-8 is kept)
}
