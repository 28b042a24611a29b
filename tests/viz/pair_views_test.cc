// OVERLAP_F_B pairs (DualPipeV) in the terminal and SVG views: each pair is
// drawn as one action made of its two halves (F half, then B half), with the
// microbatch of each, and the messages either half sends start from it.
// Rendered pixels: tests/viz/browser_test.cc.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "tests/viz/viz_util.h"
#include "viz/ascii_timeline.h"
#include "viz/html_page.h"
#include "viz/svg_timeline.h"

namespace pw::viz::testing {
namespace {

int CountPairs(const Timeline& t) {
  int n = 0;
  for (const TimelineRank& r : t.ranks)
    for (const TimelineBlock& b : r.compute) n += IsOverlap(b.action.type);
  return n;
}

TEST(PairViews, AsciiDrawsEachPairAsItsTwoHalves) {
  auto s = SimulateSchedule("dualpipev", 4, 8);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Timeline& t = s->timeline;
  const std::string text = RenderAscii(t, AsciiOptions{200, false, /*window=*/false});
  // Every pair reads "F<f mb>..&B<b mb>" on its rank's line, in order.
  std::vector<std::string> lines;
  for (size_t a = 0, b; (b = text.find('\n', a)) != std::string::npos; a = b + 1)
    lines.push_back(text.substr(a, b - a));
  int found = 0;
  for (int r = 0; r < t.pp_size; ++r) {
    const std::string prefix = "r" + std::to_string(r) + " ";
    std::string line;
    for (const std::string& l : lines)
      if (l.rfind(prefix, 0) == 0) line = l;
    ASSERT_FALSE(line.empty()) << text;
    size_t pos = 0;
    for (const TimelineBlock& b : t.ranks[r].compute) {
      if (!IsOverlap(b.action.type)) continue;
      // "F<f mb>", the F half's lower-case fill, then "&B<b mb>": the pair.
      const std::regex pair_re("F" + std::to_string(b.action.microbatch) + "f*&B" +
                               std::to_string(b.action.b_microbatch) + "b*");
      std::smatch m;
      const std::string rest = line.substr(pos);
      ASSERT_TRUE(std::regex_search(rest, m, pair_re)) << b.action.ToString() << "\n" << line;
      pos += m.position(0) + m.length(0);
      ++found;
    }
  }
  EXPECT_EQ(found, CountPairs(t));
  EXPECT_GT(found, 20);
  EXPECT_NE(text.find("F7ff&B3bb = an overlapped pair (OVERLAP_F_B)"), std::string::npos) << text;
  // Colour: the F half on the forward colour, the B half on the backward one.
  const std::string color = RenderAscii(t, AsciiOptions{200, true, false});
  EXPECT_TRUE(std::regex_search(color, std::regex("\x1b\\[97;44mF7f*\x1b\\[30;42m&B3b*\x1b\\[0m")));
  // A schedule without pairs does not explain them.
  auto plain = SimulateSchedule("zb-v", 4, 8);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(RenderAscii(plain->timeline, AsciiOptions{200, false, false}).find("overlapped pair"), std::string::npos);
}

TEST(PairViews, SvgGroupsEachPairWithBothHalvesAndItsMessages) {
  auto s = SimulateSchedule("dualpipev", 4, 8);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Timeline& t = s->timeline;
  SvgOptions o;
  o.window = false;
  const SvgGeometry g = LayoutSvg(t, o);
  const std::string svg = RenderSvg(t, o);
  std::vector<Element> groups;
  for (const Element& e : FindElements(svg, "g", "pair"))
    if (e.at("class") == "pair") groups.push_back(e);
  const auto f_halves = FindElements(svg, "rect", "half F");
  const auto b_halves = FindElements(svg, "rect", "half B");
  const auto boxes = FindElements(svg, "rect", "pairbox");
  const auto blocks = FindElements(svg, "rect", "blk OVERLAP_F_B");
  const int n = CountPairs(t);
  EXPECT_EQ(static_cast<int>(groups.size()), n);
  EXPECT_EQ(static_cast<int>(f_halves.size()), n);
  EXPECT_EQ(static_cast<int>(b_halves.size()), n);
  EXPECT_EQ(static_cast<int>(boxes.size()), n);
  ASSERT_EQ(static_cast<int>(blocks.size()), n);
  // The halves split the block at its middle and fill it.
  double worst = 0;
  for (int k = 0; k < n; ++k) {
    const double x = Num(blocks[k], "x"), w = Num(blocks[k], "width");
    worst = std::max({worst, std::abs(Num(f_halves[k], "x") - x), std::abs(Num(f_halves[k], "width") - w / 2),
                      std::abs(Num(b_halves[k], "x") - (x + w / 2)),
                      std::abs(Num(f_halves[k], "width") + Num(b_halves[k], "width") - w)});
    EXPECT_EQ(f_halves[k].at("fill").substr(0, 1), "#");
    EXPECT_NE(f_halves[k].at("fill"), b_halves[k].at("fill"));
  }
  std::printf("dualpipev P=4 m=8: %d pairs, worst half-geometry error %.4f px\n", n, worst);
  EXPECT_LT(worst, 0.002);
  EXPECT_NE(svg.find("F&amp;B pair (OVERLAP_F_B): one action"), std::string::npos);
  EXPECT_NE(svg.find("an overlapped pair run as one action: F of stage 0 microbatch 7 with B of stage 7 microbatch 3"),
            std::string::npos);
  (void)g;
  // With many messages the arrows show on hover of their sending block:
  // every message a pair's half sends belongs to the pair's hover group, none
  // is left without its sender.
  auto many = SimulateSchedule("dualpipev", 4, 32);
  ASSERT_TRUE(many.ok()) << many.status().ToString();
  const std::string big = RenderSvg(many->timeline, o);
  ASSERT_NE(big.find("class=\"hit\""), std::string::npos) << "expected hover arrows at m = 32";
  size_t orphan_groups = 0;
  for (size_t at = 0; (at = big.find("<g class=\"sends\"><line", at)) != std::string::npos; ++at) ++orphan_groups;
  EXPECT_EQ(orphan_groups, 0u);
}

}  // namespace
}  // namespace pw::viz::testing
