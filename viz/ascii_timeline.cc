#include "viz/ascii_timeline.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

namespace pw::viz {

namespace {

constexpr int kLabelWidth = 5;     // "r12 |"
constexpr int kMaxColsPerMin = 4;  // columns given to the shortest action when there is room
constexpr int kIdle = -1;          // cell: no action in the column
constexpr int kMixed = -2;         // cell: several actions in the column

const char* AnsiColor(ActionType t) {
  switch (t) {
    case ActionType::kF: return "\x1b[97;44m";  // white on blue
    case ActionType::kB: return "\x1b[30;42m";  // black on green
    case ActionType::kI: return "\x1b[30;43m";  // black on yellow
    case ActionType::kW: return "\x1b[97;45m";  // white on magenta
    default: return "";
  }
}

std::string TickLabel(double seconds, double step) {
  // Enough decimals to tell ticks apart.
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return Fmt("%.*f", decimals, seconds);
}

// Decimal digits of n >= 0.
int Digits(int n) {
  int d = 1;
  for (; n >= 10; n /= 10) ++d;
  return d;
}

// One rank's cells: what each of the ncols columns shows.
struct RankCells {
  std::vector<int> cell;              // block index into the rank's compute, kIdle or kMixed
  std::vector<int> mixed_microbatch;  // for a kMixed column: the microbatch all its actions share, else -1
};

// Places `blocks` (one rank's compute) on `ncols` columns at `scale` columns
// per second: block k covers columns [round(start), round(end)); a block that
// rounds to no column (shorter than about half a column, or zero time) goes to
// the column of its midpoint, so every block is in at least one column.
RankCells PlaceBlocks(const std::vector<TimelineBlock>& blocks, double scale, int ncols) {
  std::vector<std::vector<int>> in(ncols);  // (ncols, actions in the column)
  for (int k = 0; k < static_cast<int>(blocks.size()); ++k) {
    double s = blocks[k].start * scale, e = std::max(blocks[k].end, blocks[k].start) * scale;
    long a = std::clamp(std::lround(s), 0L, static_cast<long>(ncols));
    long b = std::clamp(std::lround(e), 0L, static_cast<long>(ncols));
    if (b <= a) {
      a = std::clamp(static_cast<long>(std::floor((s + e) / 2)), 0L, static_cast<long>(ncols) - 1);
      b = a + 1;
    }
    for (long c = a; c < b; ++c) in[c].push_back(k);
  }
  RankCells rc{std::vector<int>(ncols, kIdle), std::vector<int>(ncols, -1)};
  for (int c = 0; c < ncols; ++c) {
    if (in[c].size() == 1) {
      rc.cell[c] = in[c][0];
    } else if (in[c].size() > 1) {
      rc.cell[c] = kMixed;
      int mb = blocks[in[c][0]].action.microbatch;
      bool shared = std::all_of(in[c].begin(), in[c].end(),
                                [&](int k) { return blocks[k].action.microbatch == mb; });
      rc.mixed_microbatch[c] = shared ? mb : -1;
    }
  }
  return rc;
}

// Length of the stretch of equal cells starting at column c.
int RunLength(const std::vector<int>& cell, int c) {
  int run = 1;
  while (c + run < static_cast<int>(cell.size()) && cell[c + run] == cell[c]) ++run;
  return run;
}

// True when every stretch of one action has room for its letter and whole
// microbatch number and no column is mixed: then numbers are written inline.
bool LabelsFitInline(const Timeline& t, const std::vector<RankCells>& cells) {
  for (int r = 0; r < t.pp_size; ++r) {
    const std::vector<int>& cell = cells[r].cell;
    for (int c = 0; c < static_cast<int>(cell.size());) {
      int run = RunLength(cell, c);
      if (cell[c] == kMixed) return false;
      if (cell[c] >= 0 && run < 1 + Digits(t.ranks[r].compute[cell[c]].action.microbatch)) return false;
      c += run;
    }
  }
  return true;
}

// Writes microbatch `mb` downwards into the digit lines at column c, units in
// the last line.
void PutDigits(int mb, int c, std::vector<std::string>* lines) {
  std::string s = std::to_string(mb);
  const int n = static_cast<int>(lines->size());
  for (int i = 0; i < static_cast<int>(s.size()) && i < n; ++i) (*lines)[n - s.size() + i][c] = s[i];
}

}  // namespace

std::string RenderAscii(const Timeline& t, const AsciiOptions& options) {
  const int width = std::max(options.width, 40);
  const int avail = width - kLabelWidth - 1;
  double min_dur = 0;
  int max_microbatch = 0;
  for (const TimelineRank& r : t.ranks)
    for (const TimelineBlock& b : r.compute) {
      if (b.end > b.start && (min_dur == 0 || b.end - b.start < min_dur)) min_dur = b.end - b.start;
      max_microbatch = std::max(max_microbatch, b.action.microbatch);
    }
  std::string out = Fmt("%s: %s, P=%d ranks, S=%d stages, m=%d microbatches\n", t.title.c_str(), t.kind.c_str(),
                        t.pp_size, t.num_stages, t.num_microbatches);
  if (t.makespan_s <= 0 || min_dur <= 0) return out + "(no compute time to draw)\n";

  double scale;  // columns per second
  double units = t.makespan_s / min_dur;
  bool compressed = units > avail + 1e-9;
  if (!compressed) {
    int cols = std::min(kMaxColsPerMin, std::max(1, static_cast<int>(std::floor(avail / units + 1e-9))));
    scale = cols / min_dur;
    out += Fmt("time: 1 column = %s (shortest action %s = %d column%s); action edges rounded to the nearest "
               "column\n",
               FormatSeconds(1 / scale).c_str(), FormatSeconds(min_dur).c_str(), cols, cols == 1 ? "" : "s");
  } else {
    scale = avail / t.makespan_s;
    const int full_width = kLabelWidth + 1 + static_cast<int>(std::ceil(units - 1e-9));
    out += Fmt("time COMPRESSED to fit %d columns: 1 column = %s, longer than the shortest action (%s); an action "
               "shorter than half a column shares one (*); --width %d or more gives every action its own columns\n",
               width, FormatSeconds(1 / scale).c_str(), FormatSeconds(min_dur).c_str(), full_width);
  }
  const int ncols = std::max(1, static_cast<int>(std::ceil(t.makespan_s * scale - 1e-9)));

  // Time axis: a label every >= 10 columns.
  double step = NiceStep(10.0 / scale);
  std::string axis(kLabelWidth + ncols + 1, ' ');
  axis.replace(0, 3, "t/s");
  for (double x = 0; x <= t.makespan_s + 1e-12; x += step) {
    int col = kLabelWidth + static_cast<int>(std::lround(x * scale));
    std::string label = TickLabel(x, step);
    if (col + label.size() > axis.size()) break;
    axis.replace(col, label.size(), label);
  }
  while (!axis.empty() && axis.back() == ' ') axis.pop_back();
  out += axis + "\n";

  std::vector<RankCells> cells;
  bool any_mixed = false;
  for (int r = 0; r < t.pp_size; ++r) {
    cells.push_back(PlaceBlocks(t.ranks[r].compute, scale, ncols));
    any_mixed |= std::count(cells.back().cell.begin(), cells.back().cell.end(), kMixed) > 0;
  }
  const bool inline_numbers = LabelsFitInline(t, cells);
  const int digit_lines = Digits(max_microbatch);  // ':' lines per rank when numbers are not inline

  for (int r = 0; r < t.pp_size; ++r) {
    const auto& blocks = t.ranks[r].compute;
    const RankCells& rc = cells[r];
    std::vector<std::string> digits(inline_numbers ? 0 : digit_lines, std::string(ncols, ' '));
    std::string line = Fmt("r%-2d |", r);
    for (int c = 0; c < ncols;) {
      const int run = RunLength(rc.cell, c);
      std::string text;
      if (rc.cell[c] == kIdle) {
        text.assign(run, '.');
      } else if (rc.cell[c] == kMixed) {
        text.assign(run, '*');
        if (!inline_numbers)
          for (int i = c; i < c + run; ++i)
            if (rc.mixed_microbatch[i] >= 0) PutDigits(rc.mixed_microbatch[i], i, &digits);
      } else {
        const Action& a = blocks[rc.cell[c]].action;
        char letter = ActionTypeName(a.type)[0];
        text = std::string(1, letter);
        if (inline_numbers)
          text += std::to_string(a.microbatch);  // fits: LabelsFitInline
        else
          PutDigits(a.microbatch, c, &digits);
        text.append(run - text.size(), static_cast<char>(std::tolower(letter)));
        if (options.color) text = std::string(AnsiColor(a.type)) + text + "\x1b[0m";
      }
      line += text;
      c += run;
    }
    out += line + "|\n";
    for (const std::string& d : digits) out += std::string(kLabelWidth - 1, ' ') + ":" + d + ":\n";
  }

  // Prose lines stay within 120 columns.
  out += "legend: F forward, B full backward, I input-gradient backward, W weight-gradient backward, . idle\n";
  if (inline_numbers)
    out += "  an action: its letter, its microbatch, then lower case to its end (F12ff = F of microbatch 12)\n";
  else
    out += "  an action: its letter, then lower case to its end; its microbatch reads downwards in the ':' lines\n";
  if (any_mixed)
    out += "  * = several actions in one column; the ':' lines under a * give the microbatch they share, if one\n";
  out += "  compute only: SEND/RECV are not drawn (see --format html or trace)\n";
  out += Fmt("makespan %s, steady step %s, bubble ratio %.4f\n", FormatSeconds(t.makespan_s).c_str(),
             FormatSeconds(t.steady_step_s).c_str(), t.bubble_ratio);
  for (int r = 0; r < t.pp_size; ++r) {
    const TimelineRank& tr = t.ranks[r];
    out += Fmt("  rank %d: busy %s, idle %s (%.1f%%)", r, FormatSeconds(tr.busy_s).c_str(),
               FormatSeconds(tr.idle_s).c_str(), t.makespan_s > 0 ? 100.0 * tr.idle_s / t.makespan_s : 0.0);
    if (!tr.memory.empty()) out += ", peak memory " + FormatMemory(t, tr.peak_memory_bytes);
    if (t.memory_limit_bytes) out += " (limit " + FormatMemory(t, *t.memory_limit_bytes) + ")";
    out += "\n";
  }
  return out;
}

}  // namespace pw::viz
