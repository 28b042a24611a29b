// The pages as a person sees them: headless Chromium (Debian package
// `chromium`) renders the SVG/HTML views to PNG, and the test samples the
// pixels: every block of 1F1B P=4 m=2 has its type's colour at the simulated
// position, every wait is drawn grey (not compacted away), and the HTML pages
// of 1F1B, Interleaved 1F1B and ZB-V at P=4, m=8 render non-blank. Views at
// any size: Interleaved 1F1B at P=16, v=2, m=128 draws 16 readable lanes (no
// lane blacked out by the critical path, a white cut where the middle is
// compressed, the critical path in red under the lanes), and the HTML page of
// a planned ZB-V model shows embedding and head static memory on rank 0.
//
// Label "browser". Without chromium the tests skip, except under CI=true,
// where they fail (CI must install it). PW_VIZ_SHOTS=DIR keeps the PNGs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "plan/plan.h"
#include "tests/viz/png_reader.h"
#include "tests/viz/viz_util.h"
#include "viz/html_page.h"
#include "viz/load.h"
#include "viz/svg_timeline.h"

namespace pw::viz::testing {
namespace {

std::string FindChromium() {
  if (const char* env = std::getenv("PW_CHROMIUM")) return env;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      std::string p = dir + "/" + name;
      if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p;
    }
    start = end + 1;
  }
  return "";
}

class Browser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) {
      if (std::getenv("CI")) FAIL() << "chromium not found: CI must install the Debian package 'chromium'";
      GTEST_SKIP() << "chromium not found (apt-get install chromium); skipping the rendering test";
    }
    char tmpl[] = "/tmp/pw_viz_browser_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  // Writes `text` to NAME, screenshots it at w x h, decodes the PNG.
  void Render(const std::string& name, const std::string& text, int w, int h, Image* img) {
    std::string file = dir_ + "/" + name;
    std::ofstream(file) << text;
    std::string png = file + ".png";
    std::string cmd = "timeout 120 '" + chromium_ +
                      "' --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 "
                      "--user-data-dir='" +
                      dir_ + "/profile' --screenshot='" + png + "' --window-size=" + std::to_string(w) + "," +
                      std::to_string(h) + " 'file://" + file + "' > '" + dir_ + "/chromium.log' 2>&1";
    int rc = std::system(cmd.c_str());
    ASSERT_EQ(rc, 0) << cmd;
    std::string err = ReadPng(png, img);
    ASSERT_EQ(err, "") << png;
    ASSERT_EQ(img->width, w);
    ASSERT_EQ(img->height, h);
    if (const char* keep = std::getenv("PW_VIZ_SHOTS"))
      std::system(("mkdir -p '" + std::string(keep) + "' && cp '" + png + "' '" + keep + "/'").c_str());
  }

  std::string chromium_;
  std::string dir_;
};

void ParseHex(const char* hex, int rgb[3]) {
  for (int k = 0; k < 3; ++k) rgb[k] = std::stoi(std::string(hex + 1 + 2 * k, 2), nullptr, 16);
}

bool Near(const uint8_t* px, const int rgb[3], int tol) {
  for (int k = 0; k < 3; ++k)
    if (std::abs(int(px[k]) - rgb[k]) > tol) return false;
  return true;
}

TEST_F(Browser, OneF1BFourRanksTwoMicrobatchesPixelsMatchTheSimulation) {
  auto s = SimulateSchedule("1f1b", 4, 2);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Timeline& t = s->timeline;
  SvgOptions o;
  SvgGeometry g = LayoutSvg(t, o);
  std::string svg = SvgDocument(t, o);
  Image img;
  Render("1f1b_p4_m2.svg", svg, g.width, g.height, &img);
  if (HasFatalFailure()) return;
  int checked = 0;
  for (int r = 0; r < t.pp_size; ++r) {
    for (const TimelineBlock& b : t.ranks[r].compute) {
      // A quarter into the block, clear of the centred microbatch number.
      int x = static_cast<int>(g.X(b.start) + (b.end - b.start) * g.px_per_s * 0.25);
      int y = static_cast<int>(g.LaneTop(r) + g.lane_height * 0.5);
      int want[3];
      ParseHex(BlockColor(b.action.type, 0), want);
      const uint8_t* px = img.At(x, y);
      EXPECT_TRUE(Near(px, want, 8)) << "rank " << r << " " << b.action.ToString() << " at (" << x << "," << y
                                     << ") is rgb(" << int(px[0]) << "," << int(px[1]) << "," << int(px[2])
                                     << "), want " << BlockColor(b.action.type, 0);
      ++checked;
    }
    // Every wait is drawn: the middle of each idle interval is grey hatch, not
    // white and not a block colour.
    double t0 = 0;
    std::vector<std::pair<double, double>> gaps;
    for (const TimelineBlock& b : t.ranks[r].compute) {
      if (b.start > t0) gaps.push_back({t0, b.start});
      t0 = b.end;
    }
    if (t.makespan_s > t0) gaps.push_back({t0, t.makespan_s});
    for (const auto& [a, b] : gaps) {
      int x = static_cast<int>(g.X((a + b) / 2)), y = static_cast<int>(g.LaneTop(r) + g.lane_height * 0.5);
      const uint8_t* px = img.At(x, y);
      bool grey = std::abs(px[0] - px[1]) < 8 && std::abs(px[1] - px[2]) < 8 && px[0] >= 150 && px[0] <= 235;
      EXPECT_TRUE(grey) << "rank " << r << " idle " << a << ".." << b << " at (" << x << "," << y << ") is rgb("
                        << int(px[0]) << "," << int(px[1]) << "," << int(px[2]) << ")";
      ++checked;
    }
  }
  // Rank 0 waits 8 s between F1 and B0: a wide grey band, not blocks back to back.
  EXPECT_EQ(checked, 16 + 12);  // 16 blocks; idle gaps: 2 + 4 + 4 + 2 over ranks 0..3
}

TEST_F(Browser, HtmlPagesRenderAtPFourMEight) {
  for (const char* name : {"1f1b", "interleaved-1f1b", "zb-v"}) {
    auto s = SimulateSchedule(name, 4, 8);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().ToString();
    Image img;
    Render(std::string(name) + "_p4_m8.html", RenderHtmlPage(s->timeline), 1400, 900, &img);
    if (HasFatalFailure()) return;
    int f_rgb[3], white = 0, f_pixels = 0;
    ParseHex(BlockColor(ActionType::kF, 0), f_rgb);
    std::set<uint32_t> colours;
    for (int y = 0; y < img.height; ++y)
      for (int x = 0; x < img.width; ++x) {
        const uint8_t* px = img.At(x, y);
        if (px[0] > 250 && px[1] > 250 && px[2] > 250) ++white;
        if (Near(px, f_rgb, 4)) ++f_pixels;
        colours.insert((uint32_t(px[0]) << 16) | (uint32_t(px[1]) << 8) | px[2]);
      }
    double non_white = 1.0 - double(white) / (img.width * img.height);
    EXPECT_GT(non_white, 0.10) << name << ": the page looks blank";
    EXPECT_GT(colours.size(), 20u) << name;
    // 8 microbatches x 4 ranks of forward blocks (the stage-0 chunk colour),
    // each at least ~15 x 24 px on a 1100 px axis.
    EXPECT_GT(f_pixels, 4 * 8 * 15 * 20 / (std::string(name) == "1f1b" ? 1 : 2)) << name;
  }
}

// DualPipeV's OVERLAP_F_B pairs: each is drawn as one outlined box whose left
// half has the forward colour and right half the backward colour (of each
// half's own stage shade), so a reader sees one action made of two halves.
// Ordinary blocks carry no dark outline.
TEST_F(Browser, DualPipeVPairsShowBothHalvesInOneOutline) {
  auto s = SimulateSchedule("dualpipev", 4, 8);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Timeline& t = s->timeline;
  SvgOptions o;
  o.window = false;
  const SvgGeometry g = LayoutSvg(t, o);
  Image img;
  Render("dualpipev_p4_m8.svg", SvgDocument(t, o), g.width, g.height, &img);
  if (HasFatalFailure()) return;
  int pairs = 0, plain = 0;
  for (int r = 0; r < t.pp_size; ++r) {
    const TimelineRank& tr = t.ranks[r];
    auto chunk = [&](int stage) {
      return static_cast<int>(std::find(tr.stages.begin(), tr.stages.end(), stage) - tr.stages.begin());
    };
    for (const TimelineBlock& b : tr.compute) {
      const double x0 = g.X(b.start), x1 = g.X(b.end);
      const int y = static_cast<int>(g.LaneTop(r) + g.lane_height * 0.5);
      const int ytop = static_cast<int>(g.LaneTop(r) + g.lane_height * 0.5 - 7);
      // The darkest pixel in the 3 px just inside an edge (the 1.5 px
      // outline lies at x + 0.75, anti-aliased over two pixel columns).
      auto darkest = [&](double from) {
        int best = 255 * 3;
        for (int x = static_cast<int>(std::floor(from)); x <= static_cast<int>(std::floor(from)) + 2; ++x) {
          const uint8_t* px = img.At(x, ytop);
          best = std::min(best, int(px[0]) + int(px[1]) + int(px[2]));
        }
        return best;
      };
      const int left = darkest(x0), right = darkest(x1 - 3);
      const bool dark = left < 3 * 90;
      if (!IsOverlap(b.action.type)) {
        EXPECT_FALSE(dark) << "rank " << r << " " << b.action.ToString() << " has a dark outline (" << left << ")";
        ++plain;
        continue;
      }
      int f_rgb[3], b_rgb[3];
      ParseHex(BlockColor(ActionType::kF, chunk(b.action.stage)), f_rgb);
      ParseHex(BlockColor(ActionType::kB, chunk(b.action.b_stage)), b_rgb);
      const uint8_t* fpx = img.At(static_cast<int>(x0 + (x1 - x0) * 0.2), ytop);
      const uint8_t* bpx = img.At(static_cast<int>(x0 + (x1 - x0) * 0.8), ytop);
      EXPECT_TRUE(Near(fpx, f_rgb, 8)) << "rank " << r << " " << b.action.ToString() << " F half is rgb(" << int(fpx[0])
                                       << "," << int(fpx[1]) << "," << int(fpx[2]) << ")";
      EXPECT_TRUE(Near(bpx, b_rgb, 8)) << "rank " << r << " " << b.action.ToString() << " B half is rgb(" << int(bpx[0])
                                       << "," << int(bpx[1]) << "," << int(bpx[2]) << ")";
      EXPECT_TRUE(dark) << "rank " << r << " " << b.action.ToString() << " has no outline (left edge r+g+b " << left
                        << ")";
      // The outline spans the whole pair: dark at its right edge too.
      EXPECT_LT(right, 3 * 90) << "rank " << r << " " << b.action.ToString() << " right edge r+g+b " << right;
      (void)y;
      ++pairs;
    }
  }
  std::printf("dualpipev P=4 m=8: %d pairs drawn as one outlined F|B box, %d plain blocks without outline\n", pairs,
              plain);
  EXPECT_GT(pairs, 20);
  // The HTML page (the same SVG inside the page's script and styles) renders too.
  Image page;
  Render("dualpipev_p4_m8.html", RenderHtmlPage(t), 1400, 900, &page);
}

TEST_F(Browser, SixteenRanksM128LanesStayReadable) {
  auto s = SimulateSchedule("interleaved-1f1b", 16, 128, 2);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Timeline& t = s->timeline;
  SvgOptions o;
  o.highlight = HighlightOf(t, CriticalPath(t));
  const SvgGeometry g = LayoutSvg(t, o);
  ASSERT_TRUE(g.window.Compressed());
  Image img;
  Render("interleaved_p16_v2_m128.svg", SvgDocument(t, o), g.width, g.height, &img);
  if (HasFatalFailure()) return;
  const int cut_a = static_cast<int>(g.X(g.window.HiddenBegin())), cut_b = cut_a + static_cast<int>(kCutPx);
  double worst_black = 0, worst_drawn = 1;
  for (int r = 0; r < t.pp_size; ++r) {
    const int y = static_cast<int>(g.LaneTop(r) + g.lane_height / 2);
    int black = 0, drawn = 0, n = 0;
    for (int x = static_cast<int>(g.x0) + 1; x < static_cast<int>(g.plot_end_x) - 1; ++x) {
      if (x >= cut_a - 1 && x <= cut_b + 1) continue;
      const uint8_t* px = img.At(x, y);
      ++n;
      if (px[0] < 60 && px[1] < 60 && px[2] < 60) ++black;
      if (!(px[0] > 250 && px[1] > 250 && px[2] > 250)) ++drawn;  // a block or the idle hatch, not the page
    }
    worst_black = std::max(worst_black, double(black) / n);
    worst_drawn = std::min(worst_drawn, double(drawn) / n);
    EXPECT_LT(double(black) / n, 0.02) << "rank " << r << ": the lane is covered in black";
    EXPECT_GT(double(drawn) / n, 0.97) << "rank " << r << ": parts of the lane are not drawn";
  }
  std::printf("P=16 m=128: worst lane black share %.4f, worst drawn share %.4f\n", worst_black, worst_drawn);
  // The cut is white over every lane (apart from its zigzag edges and label).
  int white = 0, n = 0;
  for (int r = 0; r < t.pp_size; ++r)
    for (int x = cut_a + 8; x < cut_b - 8; ++x) {
      const uint8_t* px = img.At(x, static_cast<int>(g.LaneTop(r) + 3));
      ++n;
      white += px[0] > 240 && px[1] > 240 && px[2] > 240;
    }
  EXPECT_GT(double(white) / n, 0.9) << "the compressed middle is not marked by a blank band";
  // The critical path: red under the lanes, not over them.
  int red[3], red_px = 0;
  ParseHex("#d62728", red);
  for (int r = 0; r < t.pp_size; ++r)
    for (int x = static_cast<int>(g.x0); x < static_cast<int>(g.plot_end_x); ++x)
      red_px += Near(img.At(x, static_cast<int>(g.LaneTop(r) + g.lane_height + 2)), red, 10);
  EXPECT_GT(red_px, 100);
}

TEST_F(Browser, ZbVPlanPageShowsEmbeddingAndHeadOnRankZero) {
  const std::string plan_path = dir_ + "/zbv.json";
  const std::string cmd = std::string(PW_CLI_PATH) +
                          " plan --model-config llama-2-7b --device H100-80GB --pp 4 --num-microbatches 8 "
                          "--micro-batch-size 1 --seq-length 4096 --schedule zb-v -o '" +
                          plan_path + "' > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  StatusOr<Plan> plan = ReadPlanFile(plan_path);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  StatusOr<Timeline> t = TimelineOfPlan(*plan, plan_path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Image img;
  Render("zbv_llama2_p4_m8.html", RenderHtmlPage(*t), 1400, 1300, &img);
  if (HasFatalFailure()) return;
  int emb[3], head[3], blocks[3], emb_px = 0, head_px = 0, block_px = 0;
  ParseHex("#e15759", emb);
  ParseHex("#edc948", head);
  ParseHex("#76b7b2", blocks);
  // Rows of the per-rank bars: rows with a long run of the blocks colour (the
  // legend's swatches are short). Rank 0's bar has an embedding and a head
  // part; every rank's has blocks.
  int bar_rows = 0;
  for (int y = 0; y < img.height; ++y) {
    int row_blocks = 0, row_emb = 0, row_head = 0;
    for (int x = 0; x < img.width; ++x) {
      row_blocks += Near(img.At(x, y), blocks, 6);
      row_emb += Near(img.At(x, y), emb, 6);
      row_head += Near(img.At(x, y), head, 6);
    }
    if (row_blocks < 100) continue;
    ++bar_rows;
    block_px += row_blocks;
    emb_px += row_emb;
    head_px += row_head;
  }
  EXPECT_GE(bar_rows, 4 * 10);  // four bars, 12 px high
  EXPECT_GT(emb_px, 10 * 10);   // 2.2 of 31.5 GiB on a 260 px bar: ~18 px wide
  EXPECT_GT(head_px, 10 * 10);
  EXPECT_GT(block_px, 4 * 10 * 200);
}

}  // namespace
}  // namespace pw::viz::testing
