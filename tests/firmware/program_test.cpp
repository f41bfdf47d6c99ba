#include "firmware/program.h"

#include <gtest/gtest.h>

#include "firmware/validate.h"

using namespace wafer;
using namespace wafer::firmware;

namespace {
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A 3 x 1 chain: (0,0) gets the injection on color 1, sends to (1,0) on color 2, which forwards to (2,0),
// the done tile, on color 3.
Image chain() {
  Image img;
  img.grid = {3, 1};
  img.tile_program.assign(3, kIdle);
  Program a;
  Task t;
  t.trigger = 1;
  t.ops = {{OpKind::Fmac, 64}};
  t.sends = {{2, 4, {Dest::Kind::Tile, 1, 0, 1}}};
  a.tasks.push_back(t);
  Program b;
  Task u;
  u.trigger = 2;
  u.start = Task::Start::Stream;
  u.ops = {{OpKind::Add, 8}};
  u.sends = {{3, 4, {Dest::Kind::Tile, 1, 0, 1}}};
  b.tasks.push_back(u);
  img.tile_program[0] = img.intern(a);
  img.tile_program[1] = img.intern(b);
  img.start.push_back({{0, 0}, 1, 2});
  img.done_tile = {2, 0};
  img.done_color = 3;
  img.done_arrivals = 1;
  img.layer_names = {"layer 0"};
  img.op_names = {"qkv_proj"};
  return img;
}
}  // namespace

TEST(Program, InternSharesIdenticalPrograms) {
  Image img = chain();
  EXPECT_EQ(img.programs.size(), 2u);
  Program copy = img.programs[0];
  EXPECT_EQ(img.intern(copy), 0u);
  copy.tasks[0].ops[0].elements = 65;
  EXPECT_EQ(img.intern(copy), 2u);
  EXPECT_EQ(img.programs.size(), 3u);
}

TEST(Program, DumpListsTasksOpsAndSends) {
  Image img = chain();
  std::string d = dump(img, {0, 0});
  EXPECT_TRUE(has(d, "fmac") && has(d, "64 elements") && has(d, "tile (+1,+0)") && has(d, "layer 0") &&
              has(d, "qkv_proj"))
      << d;
  EXPECT_TRUE(has(dump(img, {2, 0}), "idle"));
  EXPECT_TRUE(has(dump(img, {2, 0}), "the step ends"));
  EXPECT_TRUE(has(dump(img, {5, 0}), "outside"));
  EXPECT_STREQ(to_string(OpKind::StreamIn), "stream_in");
}

TEST(Validate, AConnectedChainPasses) {
  auto v = validate(chain());
  EXPECT_TRUE(v.ok()) << v.problems.front();
  EXPECT_EQ(v.tasks_run, 2u);
  EXPECT_EQ(v.bursts_delivered, 3u);
}

TEST(Validate, ASendLeavingTheGridIsReported) {
  Image img = chain();
  img.programs[1].tasks[0].sends[0].dest.dx = 5;
  auto v = validate(img);
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(has(v.problems.front(), "leaves the 3 x 1 grid")) << v.problems.front();
}

// A task reads the output of a task before it in its program (Task::after): at most its own index back, and the dump
// names the task it reads.
TEST(Validate, ATaskReadsTheOutputOfATaskBeforeIt) {
  Image img = chain();
  img.programs[1].tasks.insert(img.programs[1].tasks.begin(), img.programs[0].tasks[0]);
  img.programs[1].tasks[0].trigger = 5, img.programs[1].tasks[0].sends.clear();
  img.start.push_back({{1, 0}, 5, 1});
  img.programs[1].tasks[1].after = 1;
  EXPECT_TRUE(validate(img).ok()) << validate(img).problems.front();
  EXPECT_TRUE(has(dump(img, {1, 0}), "[layer 0 / qkv_proj] after task 0")) << dump(img, {1, 0});
  img.programs[1].tasks[1].after = 2;
  auto v = validate(img);
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(has(v.problems.front(), "program 1 task 1 reads the output of a task 2 before it")) << v.problems.front();
}

TEST(Validate, ABurstWithoutAConsumerIsReported) {
  Image img = chain();
  img.programs[0].tasks[0].sends[0].color = 7;
  auto v = validate(img);
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(has(v.problems.front(), "no task triggered by it")) << v.problems.front();
}

TEST(Validate, ArrivalCountsMustMatchTheBurstsSent) {
  Image img = chain();
  img.programs[1].tasks[0].arrivals = 2;  // waits for a burst nobody sends
  auto v = validate(img);
  ASSERT_FALSE(v.ok());
  bool never = false, done = false;
  for (const auto& p : v.problems) never |= has(p, "never runs"), done |= has(p, "done tile");
  EXPECT_TRUE(never && done);
  // One burst too many.
  img = chain();
  img.programs[0].tasks[0].sends.push_back(img.programs[0].tasks[0].sends[0]);
  v = validate(img);
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(has(v.problems.front(), "one burst too many")) << v.problems.front();
}

TEST(Validate, MulticastReachesEveryTileOfTheSegment) {
  Image img;
  img.grid = {4, 3};
  img.tile_program.assign(12, kIdle);
  Program src;
  Task t;
  t.trigger = 0;
  t.sends = {{1, 1, {Dest::Kind::Column, 0, 0, 3}}};  // column x = 3, rows 0..2 (the source included)
  src.tasks.push_back(t);
  Program sink;
  Task u;
  u.trigger = 1;
  u.sends = {{2, 1, {Dest::Kind::Row, -3, 0, 4}}};  // back along the row to x = 0..3
  sink.tasks.push_back(u);
  img.programs = {src};
  img.tile_program[img.grid.index({3, 0})] = 0;
  Program both = src;
  both.tasks.push_back(u);
  img.programs.push_back(sink);
  img.programs.push_back(both);
  img.tile_program[img.grid.index({3, 0})] = 2;
  img.tile_program[img.grid.index({3, 1})] = 1;
  img.tile_program[img.grid.index({3, 2})] = 1;
  img.start.push_back({{3, 0}, 0, 1});
  // Row multicasts from (3, y) reach (0..3, y): 12 bursts on color 2; make (0, 2) the done tile of one and
  // give every other tile a task for color 2.
  Program leaf;
  Task l;
  l.trigger = 2;
  leaf.tasks.push_back(l);
  img.programs.push_back(leaf);
  Program sink_leaf = sink;
  sink_leaf.tasks.push_back(l);
  img.programs.push_back(sink_leaf);
  Program both_leaf = both;
  both_leaf.tasks.push_back(l);
  img.programs.push_back(both_leaf);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 3; ++x) img.tile_program[img.grid.index({x, y})] = 3;
  img.tile_program[img.grid.index({3, 0})] = 5;
  img.tile_program[img.grid.index({3, 1})] = 4;
  img.tile_program[img.grid.index({3, 2})] = 4;
  img.tile_program[img.grid.index({0, 2})] = kIdle;
  img.done_tile = {0, 2};
  img.done_color = 2;
  auto v = validate(img);
  EXPECT_TRUE(v.ok()) << v.problems.front();
  EXPECT_EQ(v.bursts_delivered, 1u + 3u + 12u);
  EXPECT_EQ(colors_used(img.programs[5]), 3);
}
