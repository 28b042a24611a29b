// What the SVG and terminal views draw, checked against the simulation:
// one block per compute action at its simulated start and width, idle gaps
// exactly where ranks wait (never compacted), an arrow per message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "tests/viz/viz_util.h"
#include "viz/ascii_timeline.h"
#include "viz/html_page.h"
#include "viz/svg_timeline.h"

namespace pw::viz::testing {
namespace {

constexpr double kPx = 1e-3;  // attribute rounding (6 significant digits)

// Every block of the SVG sits where the simulation puts it; every gap is idle.
void ExpectSvgMatchesSimulation(const Timeline& t, const std::string& label) {
  SvgOptions o;
  const SvgGeometry g = LayoutSvg(t, o);
  const std::string svg = RenderSvg(t, o);
  std::vector<Element> blocks = FindElements(svg, "rect", "blk");
  size_t compute = 0;
  for (const TimelineRank& r : t.ranks) compute += r.compute.size();
  ASSERT_EQ(blocks.size(), compute) << label;
  size_t k = 0;
  for (int r = 0; r < t.pp_size; ++r)
    for (const TimelineBlock& b : t.ranks[r].compute) {
      const Element& e = blocks[k++];
      std::string where = label + " rank " + std::to_string(r) + " " + b.action.ToString();
      EXPECT_EQ(e.at("data-action"), b.action.ToString()) << where;
      EXPECT_EQ(e.at("data-rank"), std::to_string(r)) << where;
      EXPECT_NEAR(Num(e, "x"), g.X(b.start), kPx) << where;
      EXPECT_NEAR(Num(e, "width"), (b.end - b.start) * g.px_per_s, kPx) << where;
      EXPECT_NEAR(Num(e, "y"), g.LaneTop(r), kPx) << where;
      EXPECT_EQ(e.at("fill").substr(0, 1), "#") << where;
    }
  // Idle + busy covers [0, makespan] on every rank, without overlap.
  std::vector<Element> idle = FindElements(svg, "rect", "idle");
  for (int r = 0; r < t.pp_size; ++r) {
    double idle_px = 0;
    for (const Element& e : idle)
      if (e.at("data-rank") == std::to_string(r)) idle_px += Num(e, "width");
    EXPECT_NEAR(idle_px, t.ranks[r].idle_s * g.px_per_s, 1e-2) << label << " rank " << r;
  }
  EXPECT_EQ(FindElements(svg, "line", "msg").size(), t.messages.size()) << label;
}

TEST(SvgTimeline, OneF1BFourRanksTwoMicrobatchesIsDrawnExactly) {
  // The case a public visualiser got wrong by drawing actions back to back
  // and hiding the waits.
  auto s = SimulateSchedule("1f1b", 4, 2);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Timeline& t = s->timeline;
  ASSERT_DOUBLE_EQ(t.makespan_s, 15.0);  // 3 (m + P - 1)
  // Expected compute intervals, from the 1F1B dependency chain (F=1, B=2):
  // F(s,mb) starts at s + mb; B0 runs on rank 3 at [4,6], rank 2 [6,8],
  // rank 1 [8,10], rank 0 [10,12]; rank 3 does F1 [6,7] then B1 [7,9], and
  // B1 follows down at [9,11], [11,13], [13,15].
  struct Want {
    int rank;
    const char* action;
    double start, end;
  } want[] = {
      {0, "0F0", 0, 1}, {0, "0F1", 1, 2}, {0, "0B0", 10, 12}, {0, "0B1", 13, 15},
      {1, "1F0", 1, 2}, {1, "1F1", 2, 3}, {1, "1B0", 8, 10},  {1, "1B1", 11, 13},
      {2, "2F0", 2, 3}, {2, "2F1", 3, 4}, {2, "2B0", 6, 8},   {2, "2B1", 9, 11},
      {3, "3F0", 3, 4}, {3, "3B0", 4, 6}, {3, "3F1", 6, 7},   {3, "3B1", 7, 9},
  };
  const SvgGeometry g = LayoutSvg(t);
  const std::string svg = RenderSvg(t);
  std::vector<Element> blocks = FindElements(svg, "rect", "blk");
  ASSERT_EQ(blocks.size(), 16u);
  for (const Want& w : want) {
    auto it = std::find_if(blocks.begin(), blocks.end(), [&](const Element& e) {
      return e.at("data-action") == w.action && e.at("data-rank") == std::to_string(w.rank);
    });
    ASSERT_NE(it, blocks.end()) << w.action;
    EXPECT_NEAR(Num(*it, "x"), g.X(w.start), kPx) << w.action;
    EXPECT_NEAR(Num(*it, "width"), g.X(w.end) - g.X(w.start), kPx) << w.action;
  }
  // Rank 0 waits from 2 to 10 and from 12 to 13: drawn as idle, not compacted.
  std::vector<std::pair<double, double>> idle0;
  for (const Element& e : FindElements(svg, "rect", "idle"))
    if (e.at("data-rank") == "0") idle0.push_back({Num(e, "data-start"), Num(e, "data-end")});
  ASSERT_EQ(idle0.size(), 2u);
  EXPECT_DOUBLE_EQ(idle0[0].first, 2);
  EXPECT_DOUBLE_EQ(idle0[0].second, 10);
  EXPECT_DOUBLE_EQ(idle0[1].first, 12);
  EXPECT_DOUBLE_EQ(idle0[1].second, 13);
  ExpectSvgMatchesSimulation(t, "1f1b P=4 m=2");
}

TEST(SvgTimeline, EveryRegisteredFamilyMatchesItsSimulation) {
  for (const std::string& name : ScheduleNames()) {
    auto s = SimulateSchedule(name, 4, 8);
    if (!s.ok()) {
      ADD_FAILURE() << name << ": " << s.status().ToString();
      continue;
    }
    ExpectSvgMatchesSimulation(s->timeline, name + " P=4 m=8");
  }
}

TEST(SvgTimeline, MemoryCurveAndLimitLine) {
  auto s = SimulateSchedule("1f1b", 4, 8);
  ASSERT_TRUE(s.ok());
  Timeline t = s->timeline;
  t.memory_limit_bytes = 5;
  std::string svg = RenderSvg(t);
  EXPECT_EQ(FindElements(svg, "polyline", "mem").size(), 4u);
  EXPECT_EQ(FindElements(svg, "line", "limit").size(), 4u);
  EXPECT_NE(svg.find("peak 4 stage activations"), std::string::npos);
}

// Everything in an HTML/SVG document that would make a viewer fetch another
// resource: a URL anywhere except as an xmlns namespace name, an href/src
// that is not a same-document "#id", a CSS url(...) that is not "#id", or an
// @import. Returned as the offending snippets.
std::vector<std::string> ExternalReferences(const std::string& doc) {
  std::vector<std::string> out;
  auto scan = [&](const std::regex& re, auto allowed) {
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), re); it != std::sregex_iterator(); ++it)
      if (!allowed(*it)) out.push_back(it->str());
  };
  // A URL with a scheme or protocol-relative "//host", with the text before it.
  scan(std::regex(R"re((xmlns(:[A-Za-z]+)?="|)(([A-Za-z][A-Za-z0-9+.-]*:)?//[^\s"'()<>]+))re"),
       [](const std::smatch& m) { return m[1].length() > 0; });
  scan(std::regex(R"re(\b(href|src)\s*=\s*["']?([^"'\s>]*))re", std::regex::icase),
       [](const std::smatch& m) { return m[2].str().rfind("#", 0) == 0; });
  scan(std::regex(R"re(url\(\s*["']?([^"')]*))re", std::regex::icase),
       [](const std::smatch& m) { return m[1].str().rfind("#", 0) == 0; });
  scan(std::regex("@import", std::regex::icase), [](const std::smatch&) { return false; });
  return out;
}

TEST(HtmlPage, ExternalReferencesFindsWhatABrowserWouldFetch) {
  EXPECT_TRUE(ExternalReferences("<svg xmlns=\"http://www.w3.org/2000/svg\"><rect fill=\"url(#hatch)\"/>"
                                 "<use href=\"#arrow\"/></svg>")
                  .empty());
  for (const char* bad :
       {"<img src=\"http://example.com/a.png\">", "<a href=\"https://example.com\">x</a>", "<link href=\"style.css\">",
        "<image xlink:href=\"pic.png\"/>", "<rect fill=\"url(http://example.com/p.svg#h)\"/>",
        "<style>@import 'x.css';</style>", "<p>see //cdn.example.com/lib.js</p>",
        "<svg xmlns=\"http://www.w3.org/2000/svg\" "
        "src=\"file:///etc/x\">"})
    EXPECT_FALSE(ExternalReferences(bad).empty()) << bad;
}

TEST(HtmlPage, SelfContainedWithHoverText) {
  auto s = SimulateSchedule("interleaved-1f1b", 4, 8);
  ASSERT_TRUE(s.ok());
  std::string html = RenderHtmlPage(s->timeline);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Self-contained: nothing to fetch. The SVG namespace name is a URL but
  // only an identifier, so it is the one URL allowed (and it must be there).
  EXPECT_NE(html.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(ExternalReferences(html), std::vector<std::string>{});
  EXPECT_NE(html.find("<title>rank 0: 0F0 (stage 0, microbatch 0)"), std::string::npos);
  EXPECT_NE(html.find("bubble ratio"), std::string::npos);
}

TEST(VizHelpers, NiceStepAndStagesText) {
  EXPECT_EQ(NiceStep(0), 1);
  EXPECT_EQ(NiceStep(-3), 1);
  EXPECT_DOUBLE_EQ(NiceStep(1), 1);
  EXPECT_DOUBLE_EQ(NiceStep(1.2), 2);
  EXPECT_DOUBLE_EQ(NiceStep(2), 2);
  EXPECT_DOUBLE_EQ(NiceStep(3), 5);
  EXPECT_DOUBLE_EQ(NiceStep(7), 10);
  EXPECT_DOUBLE_EQ(NiceStep(0.03), 0.05);
  EXPECT_DOUBLE_EQ(NiceStep(1500), 2000);
  EXPECT_EQ(StagesText({}), "");
  EXPECT_EQ(StagesText({3}), "3");
  EXPECT_EQ(StagesText({0, 4, 8}), "0,4,8");
}

TEST(AsciiTimeline, OneF1BFourRanksTwoMicrobatchesGolden) {
  auto s = SimulateSchedule("1f1b", 4, 2);
  ASSERT_TRUE(s.ok());
  std::string text = RenderAscii(s->timeline, AsciiOptions{120, false});
  // 4 columns per second: waits are dots, blocks are letter + microbatch.
  EXPECT_NE(text.find("r0  |F0ffF1ff................................B0bbbbbb....B1bbbbbb|"), std::string::npos) << text;
  EXPECT_NE(text.find("r3  |............F0ffB0bbbbbbF1ffB1bbbbbb........................|"), std::string::npos) << text;
  EXPECT_NE(text.find("bubble ratio 0.6000"), std::string::npos);
  EXPECT_NE(text.find("rank 0: busy 6 s, idle 9 s (60.0%), peak memory 2 stage activations"), std::string::npos);
  EXPECT_EQ(text.find("\x1b["), std::string::npos);  // plain unless asked
  EXPECT_NE(RenderAscii(s->timeline, AsciiOptions{120, true}).find("\x1b[97;44m"), std::string::npos);
}

TEST(AsciiTimeline, FitsOneHundredTwentyColumnsAndSaysWhenCompressed) {
  for (auto [P, m] : {std::pair{8, 16}, std::pair{8, 64}, std::pair{16, 64}}) {
    for (const char* name : {"1f1b", "zb-h1", "interleaved-1f1b"}) {
      auto s = SimulateSchedule(name, P, m);
      ASSERT_TRUE(s.ok()) << name << ": " << s.status().ToString();
      std::string text = RenderAscii(s->timeline, AsciiOptions{120, false, /*window=*/false});
      std::stringstream ss(text);
      std::string line;
      int rows = 0;
      while (std::getline(ss, line)) {
        if (line.rfind("legend:", 0) == 0 || line.rfind("time", 0) == 0 ||
            line.find(": simulated,") != std::string::npos)
          continue;  // prose lines may be longer; the drawing must fit
        EXPECT_LE(line.size(), 120u) << name << " P=" << P << " m=" << m << ": " << line;
        if (line.rfind("r", 0) == 0 && line.find('|') == 4) ++rows;
      }
      EXPECT_EQ(rows, P) << name;
      bool compressed = s->timeline.makespan_s > 114;
      EXPECT_EQ(text.find("COMPRESSED") != std::string::npos, compressed) << name << " P=" << P << " m=" << m;
      // With the window (the default): the same bounds; a step that needs
      // compressing and has a long steady state (m = 64) is windowed.
      std::string win = RenderAscii(s->timeline, AsciiOptions{120, false});
      std::stringstream ws(win);
      rows = 0;
      while (std::getline(ws, line)) {
        if (line.rfind("legend:", 0) == 0 || line.rfind("time", 0) == 0 ||
            line.find(": simulated,") != std::string::npos)
          continue;
        EXPECT_LE(line.size(), 120u) << name << " P=" << P << " m=" << m << " windowed: " << line;
        if (line.rfind("r", 0) == 0 && line.find('|') == 4) ++rows;
      }
      EXPECT_EQ(rows, P) << name;
      EXPECT_EQ(win.find("time WINDOWED") != std::string::npos, m == 64) << name << " P=" << P << " m=" << m << "\n"
                                                                         << win;
    }
  }
}

}  // namespace
}  // namespace pw::viz::testing
