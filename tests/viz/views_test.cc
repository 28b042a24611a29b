// Views at any size (#17): a long step is drawn as a window with a marked
// compressed middle, lanes never overlap or hide each other, the critical
// path is a bar under its blocks, memory axes follow the peak, the terminal
// drawing stays inside its width, and the per-rank static memory breakdown
// sums to the plan's static bytes exactly. Checked on the SVG/HTML/text the
// views write, against the timeline and the plan.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "plan/plan.h"
#include "tests/viz/viz_util.h"
#include "viz/ascii_timeline.h"
#include "viz/html_page.h"
#include "viz/load.h"
#include "viz/static_memory.h"
#include "viz/svg_timeline.h"
#include "viz/window.h"

#ifndef PW_CLI_PATH
#error "PW_CLI_PATH (the pipewright binary) must be defined by the build"
#endif

namespace pw::viz::testing {
namespace {

constexpr double kPx = 2e-3;  // attribute rounding (3 decimals)

// Draws `t` as SVG with the critical path and checks the structure: one lane
// per rank, lanes apart, every block inside its lane and the plot, exactly
// the blocks outside the hidden middle drawn (at g.X of their times), the
// critical path as bars under its drawn blocks, no black fill or outline.
void ExpectWellFormed(const Timeline& t, const std::string& label, bool want_cut) {
  SvgOptions o;
  o.highlight = HighlightOf(t, CriticalPath(t));
  const SvgGeometry g = LayoutSvg(t, o);
  const std::string svg = RenderSvg(t, o);
  EXPECT_EQ(g.window.Compressed(), want_cut) << label;
  EXPECT_EQ(FindElements(svg, "g", "cut").size(), want_cut ? 1u : 0u) << label;
  // Lanes: P distinct ranks, each lane strictly below the previous one with a gap for the critical-path bar.
  std::vector<Element> blocks = FindElements(svg, "rect", "blk");
  std::set<std::string> ranks;
  for (const Element& e : blocks) ranks.insert(e.at("data-rank"));
  EXPECT_EQ(static_cast<int>(ranks.size()), t.pp_size) << label;
  for (int r = 0; r + 1 < t.pp_size; ++r)
    EXPECT_GE(g.LaneTop(r + 1) - (g.LaneTop(r) + g.lane_height), 6.0) << label << " lanes " << r << "," << r + 1;
  size_t drawn = 0, hidden = 0;
  for (int r = 0; r < t.pp_size; ++r)
    for (const TimelineBlock& b : t.ranks[r].compute) (g.window.Hides(b.start, b.end) ? hidden : drawn)++;
  ASSERT_EQ(blocks.size(), drawn) << label;
  if (want_cut) {
    EXPECT_GT(hidden, 0u) << label;
  }
  size_t k = 0;
  for (int r = 0; r < t.pp_size; ++r)
    for (const TimelineBlock& b : t.ranks[r].compute) {
      if (g.window.Hides(b.start, b.end)) continue;
      const Element& e = blocks[k++];
      const std::string where = label + " rank " + std::to_string(r) + " " + b.action.ToString();
      ASSERT_EQ(e.at("data-action"), b.action.ToString()) << where;
      EXPECT_NEAR(Num(e, "x"), g.X(b.start), kPx) << where;
      EXPECT_NEAR(Num(e, "width"), g.X(b.end) - g.X(b.start), kPx) << where;
      EXPECT_NEAR(Num(e, "y"), g.LaneTop(r), kPx) << where;
      EXPECT_GE(Num(e, "x"), g.x0 - kPx) << where;
      EXPECT_LE(Num(e, "x") + Num(e, "width"), g.plot_end_x + kPx) << where;
      EXPECT_NE(e.at("fill"), "#000") << where;
      EXPECT_NE(e.at("stroke"), "#000") << where;  // the old critical-path outline hid whole lanes
    }
  // Critical path: one bar per drawn critical block, in the gap under its lane.
  size_t want_bars = 0;
  for (const auto& [r, idx] : o.highlight) {
    for (const TimelineBlock& b : t.ranks[r].compute)
      if (b.index == idx && !g.window.Hides(b.start, b.end)) ++want_bars;
  }
  std::vector<Element> bars = FindElements(svg, "rect", "critbar");
  EXPECT_EQ(bars.size(), want_bars) << label;
  for (const Element& e : bars) {
    int r = std::stoi(e.at("data-rank"));
    EXPECT_GE(Num(e, "y"), g.LaneTop(r) + g.lane_height) << label;
    if (r + 1 < t.pp_size) {
      EXPECT_LE(Num(e, "y") + Num(e, "height"), g.LaneTop(r + 1)) << label;
    }
  }
  // The cut: the hidden middle is at least kMinHiddenShare of the step.
  if (want_cut) {
    const Element cut = FindElements(svg, "g", "cut")[0];
    const double hs = Num(cut, "data-hidden-start"), he = Num(cut, "data-hidden-end");
    EXPECT_GE(he - hs, kMinHiddenShare * t.makespan_s) << label;
    EXPECT_NEAR(g.X(he) - g.X(hs), kCutPx, kPx) << label;
    EXPECT_GT(std::stoi(cut.at("data-hidden-actions")), 0) << label;
  }
}

TEST(Views, SixteenRanksInterleavedM128IsWindowedWithAMarkedCut) {
  auto s = SimulateSchedule("interleaved-1f1b", 16, 128, 2);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ExpectWellFormed(s->timeline, "interleaved-1f1b P=16 v=2 m=128", /*want_cut=*/true);
  // Arrows: hundreds shown, so they wait for a hover; every shown one is there.
  const std::string svg = RenderSvg(s->timeline);
  EXPECT_NE(svg.find("class=\"timeline arrows-on-hover\""), std::string::npos);
  EXPECT_GT(FindElements(svg, "line", "msg").size(), static_cast<size_t>(kMaxVisibleArrows));
  EXPECT_LT(FindElements(svg, "line", "msg").size(), s->timeline.messages.size());
  // --window all: every block, no cut.
  SvgOptions all;
  all.window = false;
  const std::string whole = RenderSvg(s->timeline, all);
  EXPECT_EQ(FindElements(whole, "g", "cut").size(), 0u);
  EXPECT_EQ(FindElements(whole, "rect", "blk").size(), size_t(16 * 2 * 128 * 2));
}

TEST(Views, SmallAndMediumPlansAreDrawnWhole) {
  for (auto [name, P, m, v] : {std::tuple{"1f1b", 2, 4, 1}, std::tuple{"zb-v", 4, 8, 2},
                               std::tuple{"interleaved-1f1b", 4, 8, 2}, std::tuple{"1f1b", 8, 24, 1}}) {
    auto s = SimulateSchedule(name, P, m, v);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().ToString();
    ExpectWellFormed(s->timeline, StrFormat("%s P=%d m=%d", name, P, m), /*want_cut=*/false);
    const std::string svg = RenderSvg(s->timeline);
    // Up to kMaxVisibleArrows messages: all drawn; 1F1B P=8 m=24 has 336, shown on hover.
    const bool few = s->timeline.messages.size() <= static_cast<size_t>(kMaxVisibleArrows);
    EXPECT_EQ(svg.find("class=\"timeline arrows-on-hover\"") == std::string::npos, few) << name;
    EXPECT_EQ(FindElements(svg, "line", "msg").size(), s->timeline.messages.size()) << name;
  }
}

TEST(Views, GPipeHasNoSteadyStateToCut) {
  auto s = SimulateSchedule("gpipe", 4, 128);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(LayoutSvg(s->timeline).window.Compressed());
}

TEST(Views, MemoryAxisFollowsThePeakAndDrawsTheLimitOnlyWhenNear) {
  auto s = SimulateSchedule("1f1b", 4, 8);
  ASSERT_TRUE(s.ok());
  Timeline t = s->timeline;
  int64_t peak = 0;
  for (const TimelineRank& r : t.ranks) peak = std::max(peak, r.peak_memory_bytes);
  ASSERT_GT(peak, 0);
  for (int64_t limit : {int64_t{0}, peak * 100, peak + 1, peak}) {
    if (limit > 0)
      t.memory_limit_bytes = limit;
    else
      t.memory_limit_bytes.reset();
    const SvgGeometry g = LayoutSvg(t);
    const std::string svg = RenderSvg(t);
    const bool near = limit > 0 && peak >= kLimitNearShare * limit;
    EXPECT_EQ(g.limit_drawn, near) << "limit " << limit;
    EXPECT_EQ(FindElements(svg, "line", "limit").size(), near ? 4u : 0u) << "limit " << limit;
    EXPECT_GE(g.memory_top_bytes, near ? limit : peak) << "limit " << limit;
    // Within 20 % of what it must show (a round value just above it).
    EXPECT_LE(g.memory_top_bytes, 1.2 * (near ? std::max(limit, peak) : peak) + 1) << "limit " << limit;
    EXPECT_EQ(FindElements(svg, "text", "memtitle").size(), 1u);  // one title for all strips
    if (limit > 0 && !near) {
      EXPECT_NE(svg.find("above the axis"), std::string::npos);
    }
  }
}

TEST(Views, HtmlPageHasOneTitle) {
  auto s = SimulateSchedule("zb-v", 4, 8, 2);
  ASSERT_TRUE(s.ok());
  const std::string html = RenderHtmlPage(s->timeline);
  EXPECT_NE(html.find("<h1>zb-v</h1>"), std::string::npos);
  const size_t a = html.find("<svg"), b = html.find("</svg>");
  ASSERT_TRUE(a != std::string::npos && b != std::string::npos);
  const std::string svg = html.substr(a, b - a);
  EXPECT_EQ(svg.find(">zb-v<"), std::string::npos);             // the title is not repeated in the drawing
  EXPECT_EQ(svg.find("class=\"summary\""), std::string::npos);  // nor the summary line (the page has a table)
}

// Every line of the drawing (rank rows, ':' lines, axis) within `width`.
void ExpectWithinWidth(const std::string& text, int width, int P, const std::string& label) {
  std::stringstream ss(text);
  int rows = 0;
  for (std::string line; std::getline(ss, line);) {
    const bool drawing =
        line.rfind("r", 0) == 0 ? line.find('|') == 4 : line.rfind("    :", 0) == 0 || line.rfind("t/s", 0) == 0;
    if (!drawing) continue;
    EXPECT_LE(static_cast<int>(line.size()), width) << label << ": " << line;
    if (line.rfind("r", 0) == 0) ++rows;
  }
  EXPECT_EQ(rows, P) << label;
}

TEST(Views, TerminalStaysWithinItsWidthAtSixteenRanks) {
  auto s = SimulateSchedule("interleaved-1f1b", 16, 128, 2);
  ASSERT_TRUE(s.ok());
  for (int width : {40, 60, 80, 120, 200}) {
    const std::string text = RenderAscii(s->timeline, AsciiOptions{width, false});
    ExpectWithinWidth(text, width, 16, StrFormat("width %d", width));
    EXPECT_NE(text.find("time WINDOWED"), std::string::npos) << width;
    EXPECT_NE(text.find("~~~ = "), std::string::npos) << width;
  }
  const std::string small = RenderAscii(SimulateSchedule("1f1b", 2, 4)->timeline, AsciiOptions{120, false});
  ExpectWithinWidth(small, 120, 2, "1f1b P=2 m=4");
  EXPECT_EQ(small.find("WINDOWED"), std::string::npos);
}

class StaticMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pw_views_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  // `pipewright plan ARGS -o FILE` through the real binary; the plan read back.
  Plan PlanOf(const std::string& args) {
    const std::string path = dir_ + "/plan.json";
    const std::string cmd = std::string(PW_CLI_PATH) + " plan " + args + " -o '" + path + "' > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    StatusOr<Plan> p = ReadPlanFile(path);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : Plan{};
  }
  // Parts sum to each stage's static bytes, stages to the rank's, and the
  // rank's to where the simulated memory walk starts.
  void ExpectSumsExactly(const Plan& plan, const StaticBreakdown& sb, const std::string& label) {
    StatusOr<Timeline> t = TimelineOfPlan(plan, "plan.json");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_EQ(static_cast<int>(sb.ranks.size()), plan.pp_size) << label;
    int64_t worst = 0;
    for (const RankStatic& r : sb.ranks) {
      int64_t stages = 0, kinds = r.embedding_bytes + r.block_bytes + r.head_bytes;
      for (const StageStatic& st : r.stages) {
        int64_t parts = 0;
        for (const StaticPart& p : st.parts) parts += p.bytes;
        EXPECT_EQ(st.bytes, plan.stages[st.stage].memory.static_bytes) << label;
        EXPECT_EQ(plan.stages[st.stage].rank, r.rank) << label;
        if (sb.by_layer) {
          EXPECT_EQ(parts, st.bytes) << label << " stage " << st.stage;
        }
        worst = std::max(worst, std::abs(parts - st.bytes));
        stages += st.bytes;
      }
      EXPECT_EQ(stages, r.bytes) << label << " rank " << r.rank;
      if (sb.by_layer) {
        EXPECT_EQ(kinds, r.bytes) << label << " rank " << r.rank;
      }
      EXPECT_EQ(t->ranks[r.rank].memory.front().bytes, r.bytes) << label << " rank " << r.rank;
    }
    std::printf("%s: worst |sum of parts - stage static| = %lld B\n", label.c_str(), static_cast<long long>(worst));
  }
  std::string dir_;
};

TEST_F(StaticMemory, ZbVPutsEmbeddingAndHeadOnRankZero) {
  Plan plan = PlanOf(
      "--model-config llama-2-7b --device H100-80GB --pp 4 --num-microbatches 8 --micro-batch-size 1 "
      "--seq-length 4096 --schedule zb-v");
  ASSERT_EQ(plan.pp_size, 4);
  StaticBreakdown sb = StaticMemoryOf(plan);
  ASSERT_TRUE(sb.by_layer);
  EXPECT_TRUE(sb.exact) << sb.method;
  ExpectSumsExactly(plan, sb, "zb-v llama-2-7b P=4");
  EXPECT_GT(sb.ranks[0].embedding_bytes, 0);
  EXPECT_GT(sb.ranks[0].head_bytes, 0);
  for (int r = 1; r < 4; ++r) EXPECT_EQ(sb.ranks[r].embedding_bytes + sb.ranks[r].head_bytes, 0) << r;
  int blocks = 0;
  for (const RankStatic& r : sb.ranks) blocks += r.num_blocks;
  EXPECT_EQ(blocks, 32);  // llama-2-7b's decoder blocks, each on one rank
  // The same numbers in `show`'s terminal output and the HTML page.
  StatusOr<Timeline> t = TimelineOfPlan(plan, "plan.json");
  ASSERT_TRUE(t.ok());
  const std::string text = RenderAscii(*t);
  const std::string want = "rank 0 (stages 0,7): " + FormatMemory(*t, sb.ranks[0].bytes) + " = embedding " +
                           FormatMemory(*t, sb.ranks[0].embedding_bytes) + " + ";
  EXPECT_NE(text.find(want), std::string::npos) << text;
  EXPECT_NE(text.find(" + head " + FormatMemory(*t, sb.ranks[0].head_bytes) + "\n"), std::string::npos) << text;
  // Its memory axis: just above the limit (the peak is near it) or the peak.
  const SvgGeometry g = LayoutSvg(*t);
  int64_t peak = 0;
  for (const TimelineRank& r : t->ranks) peak = std::max(peak, r.peak_memory_bytes);
  const double shown = g.limit_drawn ? std::max<double>(peak, *t->memory_limit_bytes) : peak;
  EXPECT_GE(g.memory_top_bytes, shown);
  EXPECT_LE(g.memory_top_bytes, 1.2 * shown);
  std::printf("zb-v llama-2-7b: memory axis top / shown max = %.4f\n", g.memory_top_bytes / shown);
  const std::string html = RenderHtmlPage(*t);
  EXPECT_NE(html.find("<h2>Static memory per rank</h2>"), std::string::npos);
  EXPECT_NE(html.find("stage 7: blocks 28-31 "), std::string::npos);
}

TEST_F(StaticMemory, InterleavedSixteenRanksAndApportionedBytesSumExactly) {
  Plan plan = PlanOf(
      "--model-config llama-3-70b --device H200-141GB --pp 16 --num-microbatches 128 "
      "--micro-batch-size 1 --seq-length 4096 --schedule interleaved-1f1b "
      "--num-virtual-stages-per-pipeline-rank 2");
  ASSERT_EQ(plan.pp_size, 16);
  StaticBreakdown sb = StaticMemoryOf(plan);
  EXPECT_TRUE(sb.exact);
  ExpectSumsExactly(plan, sb, "interleaved llama-3-70b P=16 v=2");
  EXPECT_GT(sb.ranks[0].embedding_bytes, 0);
  EXPECT_GT(sb.ranks[15].head_bytes, 0);  // the last stage is on the last rank
  // Static bytes that are not params x bytes-per-param (as a measured
  // profile gives): apportioned by parameters, still summing exactly.
  for (PlanStage& st : plan.stages) st.memory.static_bytes = st.memory.static_bytes / 3 + 7 * st.index + 1;
  StaticBreakdown ap = StaticMemoryOf(plan);
  EXPECT_FALSE(ap.exact);
  EXPECT_TRUE(ap.by_layer);
  for (const RankStatic& r : ap.ranks)
    for (const StageStatic& st : r.stages) {
      int64_t parts = 0;
      for (const StaticPart& p : st.parts) parts += p.bytes;
      EXPECT_EQ(parts, st.bytes) << "stage " << st.stage;
    }
}

TEST(StaticMemoryNoModel, ScheduleOnlyPlanGivesStageTotals) {
  auto s = SimulateSchedule("1f1b", 4, 8);
  ASSERT_TRUE(s.ok());
  Plan plan = s->plan;
  for (PlanStage& st : plan.stages) st.memory.static_bytes = 1000 + st.index;
  StaticBreakdown sb = StaticMemoryOf(plan);
  ASSERT_EQ(sb.ranks.size(), 4u);
  EXPECT_FALSE(sb.by_layer);
  for (const RankStatic& r : sb.ranks) EXPECT_EQ(r.bytes, 1000 + r.rank);
  EXPECT_TRUE(StaticMemoryOf(s->plan).ranks.empty());  // unit plans hold no static bytes
}

}  // namespace
}  // namespace pw::viz::testing
