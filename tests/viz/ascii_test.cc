// The terminal timeline read back: every compute action of the timeline must
// be recoverable from the text (its letter and whole microbatch number, in
// rank order), or, when time is compressed, sit in a column marked '*'. These
// are the "m >= 10 reads the same" and "short actions vanish" bugs of the
// compressed view.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "tests/viz/viz_util.h"
#include "viz/ascii_timeline.h"

namespace pw::viz::testing {
namespace {

// One thing drawn in a rank row: an action (its letter and microbatch, where
// it starts) or a '*' column (with the microbatch its ':' lines give, or -1).
struct Token {
  char letter = 0;  // 'F', 'B', 'I', 'W' or '*'
  int microbatch = -1;
  int column = 0;
  std::string Text() const { return std::string(1, letter) + (microbatch >= 0 ? std::to_string(microbatch) : ""); }
};

// The tokens of each rank row of `text`, read by the conventions the legend
// states; adds a failure for any character the conventions do not explain.
std::vector<std::vector<Token>> ReadBack(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  std::vector<std::vector<Token>> ranks;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& row = lines[i];
    if (row.size() < 6 || row[0] != 'r' || row[4] != '|' || row.back() != '|') continue;
    std::string cells = row.substr(5, row.size() - 6);
    std::vector<std::string> digits;  // the ':' lines under the row
    for (size_t j = i + 1; j < lines.size() && lines[j].rfind("    :", 0) == 0; ++j) {
      EXPECT_EQ(lines[j].size(), row.size()) << lines[j];
      digits.push_back(lines[j].substr(5, cells.size()));
    }
    auto number_below = [&](size_t c) {
      std::string n;
      for (const std::string& d : digits)
        if (c < d.size() && d[c] != ' ') n += d[c];
      return n.empty() ? -1 : std::stoi(n);
    };
    std::vector<Token> tokens;
    char current = 0;  // letter of the action being read, for its fill
    for (size_t c = 0; c < cells.size(); ++c) {
      char ch = cells[c];
      if (ch == 'F' || ch == 'B' || ch == 'I' || ch == 'W') {
        Token t{ch, -1, static_cast<int>(c)};
        if (digits.empty()) {  // inline: the letter, then the whole number
          size_t e = c + 1;
          while (e < cells.size() && std::isdigit(static_cast<unsigned char>(cells[e]))) ++e;
          EXPECT_GT(e, c + 1) << "no microbatch after " << ch << " at column " << c << " of\n" << row;
          if (e > c + 1) t.microbatch = std::stoi(cells.substr(c + 1, e - c - 1));
          c = e - 1;
        } else {
          t.microbatch = number_below(c);
          EXPECT_GE(t.microbatch, 0) << "no microbatch under " << ch << " at column " << c << " of\n" << row;
        }
        tokens.push_back(t);
        current = ch;
      } else if (ch == '*') {
        tokens.push_back(Token{'*', digits.empty() ? -1 : number_below(c), static_cast<int>(c)});
        current = 0;
      } else if (ch == '~') {  // the cut of a windowed view: one token per cut
        if (tokens.empty() || tokens.back().letter != '~') tokens.push_back(Token{'~', -1, static_cast<int>(c)});
        current = 0;
      } else if (ch == '.') {
        current = 0;
      } else {
        EXPECT_TRUE(current != 0 && ch == std::tolower(current))
            << "'" << ch << "' at column " << c << " is neither a letter, its fill, '*' nor '.':\n"
            << row;
      }
    }
    ranks.push_back(tokens);
  }
  return ranks;
}

std::string ActionText(const Action& a) {
  return std::string(1, ActionTypeName(a.type)[0]) + std::to_string(a.microbatch);
}

// True when the tokens of one rank account for its compute actions in
// order: each drawn action is the next one (or the one before, continued
// after a '*'), and actions skipped between two drawn ones are covered by a
// '*' between them. With `exact`, no '*' is allowed: every action is drawn,
// in order. (A rank holding two stages draws "F3" for both: the order tells
// them apart, so this searches every matching rather than the greedy one.)
bool AccountsFor(const std::vector<Token>& tokens, const std::vector<TimelineBlock>& blocks, bool exact) {
  const size_t n = tokens.size(), k = blocks.size();
  std::vector<std::string> text(k);
  for (size_t j = 0; j < k; ++j) text[j] = ActionText(blocks[j].action);
  // ok[i][j][s]: tokens[i..] account for blocks[j..], s = a '*' since the
  // last drawn action (blocks[j - 1]). Filled from the end.
  std::vector<std::vector<std::array<bool, 2>>> ok(n + 1, std::vector<std::array<bool, 2>>(k + 1));
  for (size_t i = n + 1; i-- > 0;)
    for (size_t j = k + 1; j-- > 0;)
      for (int s = 0; s < 2; ++s) {
        bool& r = ok[i][j][s];
        if (i == n) {
          r = j == k || s;
        } else if (tokens[i].letter == '*' || tokens[i].letter == '~') {
          r = !exact && ok[i + 1][j][1];
        } else {
          const std::string x = tokens[i].Text();
          r = s && j > 0 && text[j - 1] == x && ok[i + 1][j][0];  // continued after a '*'
          for (size_t jj = j; !r && jj < k && (jj == j || s); ++jj) r = text[jj] == x && ok[i + 1][jj + 1][0];
        }
      }
  return ok[0][0][0];
}

void ExpectAccountsFor(const std::vector<Token>& tokens, const std::vector<TimelineBlock>& blocks, bool exact,
                       const std::string& context) {
  if (AccountsFor(tokens, blocks, exact)) return;
  std::string drawn, want;
  for (const Token& t : tokens) drawn += " " + t.Text();
  for (const TimelineBlock& b : blocks) want += " " + ActionText(b.action);
  ADD_FAILURE() << context << "\nthe drawing does not account for every action" << (exact ? " (exactly)" : "")
                << ":\n  drawn:  " << drawn << "\n  actions:" << want;
}

struct Case {
  const char* schedule;
  int m;
  StageCost cost;
  double latency_s;
  int v = 1;  // stages per rank
};

StatusOr<Timeline> Simulated(const Case& c) {
  const int P = 4;
  StageCosts costs = UniformCosts(P * c.v, c.cost, {}, CommModel{c.latency_s, 0});
  PW_ASSIGN_OR_RETURN(::pw::testing::Pipeline p, ::pw::testing::RunPipeline(c.schedule, P, c.m, c.v, costs));
  return TimelineFromSimulation(p.lowered, costs, p.sim, c.schedule, c.schedule, std::nullopt);
}

const Case kCases[] = {
    {"1f1b", 12, {}, 0.0},
    {"1f1b", 16, {}, 0.2},                // latency: action edges fall between columns
    {"zb-h1", 12, {1.0, 1.0, 0.5}, 0.0},  // W is the shortest action
    {"zb-h1", 16, {1.0, 1.0, 0.3}, 0.1},
    {"zb-v", 16, {}, 0.0, 2},
    {"interleaved-1f1b", 12, {0.5, 0.5, 0.5}, 0.05, 2},
};

TEST(AsciiReadBack, EveryActionIsDrawnWithItsWholeMicrobatchAtEveryWidth) {
  for (const Case& c : kCases) {
    auto t = Simulated(c);
    ASSERT_TRUE(t.ok()) << c.schedule << ": " << t.status().ToString();
    for (int width : {40, 50, 60, 80, 100, 120, 160, 200, 300}) {
      std::string text = RenderAscii(*t, AsciiOptions{width, false});
      std::string context = StrFormat("%s m=%d width %d", c.schedule, c.m, width);
      bool compressed = text.find("COMPRESSED") != std::string::npos || text.find("WINDOWED") != std::string::npos;
      auto ranks = ReadBack(text);
      ASSERT_EQ(ranks.size(), 4u) << context << "\n" << text;
      for (int r = 0; r < 4; ++r)
        ExpectAccountsFor(ranks[r], t->ranks[r].compute, !compressed, context + StrFormat(" rank %d", r) + "\n" + text);
      if (::testing::Test::HasFailure()) return;  // one drawing is enough to read
    }
  }
}

TEST(AsciiReadBack, NarrowUncompressedViewTellsMicrobatchTenFromEleven) {
  // 1F1B, m=12 at 60 columns: F gets one column, B two: "F10"/"B10" do not
  // fit, so the numbers go downwards in ':' lines (they used to read "F",
  // "Bb" for both 10 and 11).
  auto t = Simulated({"1f1b", 12, {}, 0.0});
  ASSERT_TRUE(t.ok());
  std::string text = RenderAscii(*t, AsciiOptions{60, false});
  EXPECT_EQ(text.find("COMPRESSED"), std::string::npos) << text;
  auto ranks = ReadBack(text);
  ASSERT_EQ(ranks.size(), 4u) << text;
  std::vector<std::string> drawn;
  for (const Token& tk : ranks[3]) drawn.push_back(tk.Text());
  std::vector<std::string> want;
  for (const TimelineBlock& b : t->ranks[3].compute) want.push_back(ActionText(b.action));
  EXPECT_EQ(drawn, want) << text;
  EXPECT_NE(text.find("reads downwards in the ':' lines"), std::string::npos) << text;
  EXPECT_EQ(text.find("* = several actions"), std::string::npos) << text;
}

TEST(AsciiReadBack, CompressedViewMarksSharedColumnsAndNamesTheFullWidth) {
  // ZB-H1 with W = 0.3 s and 0.1 s latency at 60 columns: one column is
  // longer than a W, so some columns hold two actions.
  auto t = Simulated({"zb-h1", 16, {1.0, 1.0, 0.3}, 0.1});
  ASSERT_TRUE(t.ok());
  std::string text = RenderAscii(*t, AsciiOptions{60, false, /*window=*/false});
  ASSERT_NE(text.find("COMPRESSED"), std::string::npos) << text;
  EXPECT_NE(text.find("* = several actions in one column"), std::string::npos) << text;
  size_t at = text.find("--width ");
  ASSERT_NE(at, std::string::npos) << text;
  int full = std::stoi(text.substr(at + 8));
  // At the width the header names, nothing is compressed or shared.
  std::string wide = RenderAscii(*t, AsciiOptions{full, false, false});
  EXPECT_EQ(wide.find("COMPRESSED"), std::string::npos) << wide;
  auto ranks = ReadBack(wide);
  ASSERT_EQ(ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) ExpectAccountsFor(ranks[r], t->ranks[r].compute, /*exact=*/true, wide);
  // One column narrower is compressed.
  EXPECT_NE(RenderAscii(*t, AsciiOptions{full - 1, false, false}).find("COMPRESSED"), std::string::npos);
}

TEST(AsciiReadBack, ColorWrapsActionsOnly) {
  auto t = Simulated({"zb-h1", 12, {1.0, 1.0, 0.5}, 0.0});
  ASSERT_TRUE(t.ok());
  std::string text = RenderAscii(*t, AsciiOptions{50, true});
  EXPECT_NE(text.find("\x1b[97;45mW"), std::string::npos) << text;  // W in magenta
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind("    :", 0) == 0) {
      EXPECT_EQ(line.find("\x1b["), std::string::npos) << line;
    }
  }
}

}  // namespace
}  // namespace pw::viz::testing
