#include "viz/ascii_timeline.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

#include "viz/window.h"

namespace pw::viz {

namespace {

constexpr int kLabelWidth = 5;     // "r12 |"
constexpr int kMaxColsPerMin = 4;  // columns given to the shortest action when there is room
constexpr int kIdle = -1;          // cell: no action in the column
constexpr int kMixed = -2;         // cell: several actions in the column
constexpr int kCut = -3;           // cell: the compressed middle of a windowed view
constexpr int kCutColumns = 3;     // "~~~"

const char* AnsiColor(ActionType t) {
  switch (t) {
    case ActionType::kF:
      return "\x1b[97;44m";  // white on blue
    case ActionType::kB:
      return "\x1b[30;42m";  // black on green
    case ActionType::kI:
      return "\x1b[30;43m";  // black on yellow
    case ActionType::kW:
      return "\x1b[97;45m";  // white on magenta
    default:
      return "";
  }
}

std::string TickLabel(double seconds, double step) {
  // Enough decimals to tell ticks apart.
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return StrFormat("%.*f", decimals, seconds);
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
RankCells PlaceBlocks(const std::vector<TimelineBlock>& blocks, double scale, int ncols, double lo, double hi,
                      bool last) {
  std::vector<std::vector<int>> in(ncols);  // (ncols, actions in the column)
  for (int k = 0; k < static_cast<int>(blocks.size()); ++k) {
    const double mid = (blocks[k].start + std::max(blocks[k].end, blocks[k].start)) / 2;
    if (mid < lo || (last ? mid > hi : mid >= hi)) continue;  // another span's
    double s = (blocks[k].start - lo) * scale, e = (std::max(blocks[k].end, blocks[k].start) - lo) * scale;
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
      bool shared = std::all_of(in[c].begin(), in[c].end(), [&](int k) { return blocks[k].action.microbatch == mb; });
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
      if (cell[c] == kCut) {
        c += run;
        continue;
      }
      if (cell[c] >= 0) {
        const Action& a = t.ranks[r].compute[cell[c]].action;
        // A pair shows "F<mb>&B<mb>", each half in its half of the run.
        const int need = IsOverlap(a.type) ? 2 * (2 + std::max(Digits(a.microbatch), Digits(a.b_microbatch)))
                                           : 1 + Digits(a.microbatch);
        if (run < need) return false;
      }
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
  const double min_dur = ShortestAction(t);
  int max_microbatch = 0;
  for (const TimelineRank& r : t.ranks)
    for (const TimelineBlock& b : r.compute)
      max_microbatch = std::max({max_microbatch, b.action.microbatch, b.action.b_microbatch});
  std::string out = StrFormat(
      "%s: %s, P=%d ranks, S=%d stages, m=%d microbatches%s\n", t.title.c_str(), t.kind.c_str(), t.pp_size,
      t.num_stages, t.num_microbatches,
      t.tp_size > 1 ? StrFormat(", T=%d tensor-parallel ranks per lane (per-TP-rank costs)", t.tp_size).c_str() : "");
  if (t.makespan_s <= 0 || min_dur <= 0) return out + "(no compute time to draw)\n";

  const TimeWindow win = options.window ? ChooseWindow(t, avail, 1.0) : FullWindow(t);
  // Columns for the shown spans; each span rounds its columns up, so keep
  // one column in hand per extra span.
  const int plot = avail - (win.Compressed() ? kCutColumns : 0) - (static_cast<int>(win.spans.size()) - 1);
  const double shown = win.ShownSeconds();
  if (win.Compressed())
    out += StrFormat(
        "time WINDOWED: shown %s (warm-up and %d steady-state periods, %d periods and the cool-down); the "
        "middle %s of steady state is cut at ~~~ (--window all draws every action)\n",
        win.Describe().c_str(), kWindowPeriods, kWindowPeriods,
        FormatSeconds(win.HiddenEnd() - win.HiddenBegin()).c_str());
  double scale;  // columns per second
  double units = shown / min_dur;
  bool compressed = units > plot + 1e-9;
  if (!compressed) {
    int cols = std::min(kMaxColsPerMin, std::max(1, static_cast<int>(std::floor(plot / units + 1e-9))));
    scale = cols / min_dur;
    out += StrFormat(
        "time: 1 column = %s (shortest action %s = %d column%s); action edges rounded to the nearest "
        "column\n",
        FormatSeconds(1 / scale).c_str(), FormatSeconds(min_dur).c_str(), cols, cols == 1 ? "" : "s");
  } else {
    scale = plot / shown;
    const int full_width = kLabelWidth + 1 + static_cast<int>(std::ceil(t.makespan_s / min_dur - 1e-9));
    out += StrFormat(
        "time COMPRESSED to fit %d columns: 1 column = %s, longer than the shortest action (%s); an action "
        "shorter than half a column shares one (*); %s--width %d or more gives every action its own "
        "columns\n",
        width, FormatSeconds(1 / scale).c_str(), FormatSeconds(min_dur).c_str(),
        win.Compressed() ? "--window all " : "", full_width);
  }
  // Columns of each shown span, and where each starts.
  std::vector<int> span_cols, span_col0;
  int ncols = 0;
  for (size_t k = 0; k < win.spans.size(); ++k) {
    if (k > 0) ncols += kCutColumns;
    span_col0.push_back(ncols);
    const double len = win.spans[k].second - win.spans[k].first;
    span_cols.push_back(std::max(1, static_cast<int>(std::ceil(len * scale - 1e-9))));
    ncols += span_cols.back();
  }

  // Time axis: a label every >= 10 columns, per span; '~' over the cut.
  double step = NiceStep(10.0 / scale);
  std::string axis(kLabelWidth + ncols + 1, ' ');
  axis.replace(0, 3, "t/s");
  for (size_t k = 0; k < win.spans.size(); ++k) {
    const auto [lo, hi] = win.spans[k];
    const int end_col = kLabelWidth + span_col0[k] + span_cols[k];
    for (double x = std::max(0.0, std::ceil(lo / step - 1e-9) * step); x <= hi + 1e-12; x += step) {
      int col = kLabelWidth + span_col0[k] + static_cast<int>(std::lround((x - lo) * scale));
      std::string label = TickLabel(x, step);
      if (col + static_cast<int>(label.size()) >
          (k + 1 < win.spans.size() ? end_col - 1 : static_cast<int>(axis.size())))  // a space before the cut
        break;
      if (k > 0 && col < kLabelWidth + span_col0[k] + 1) continue;
      axis.replace(col, label.size(), label);
    }
    if (k > 0) axis.replace(kLabelWidth + span_col0[k] - kCutColumns, kCutColumns, std::string(kCutColumns, '~'));
  }
  while (!axis.empty() && axis.back() == ' ') axis.pop_back();
  out += axis + "\n";

  std::vector<RankCells> cells;
  bool any_mixed = false;
  bool any_pair = false;  // an OVERLAP_F_B drawn: explain it in the legend
  for (int r = 0; r < t.pp_size; ++r) {
    RankCells rc;
    for (size_t k = 0; k < win.spans.size(); ++k) {
      if (k > 0) {
        rc.cell.insert(rc.cell.end(), kCutColumns, kCut);
        rc.mixed_microbatch.insert(rc.mixed_microbatch.end(), kCutColumns, -1);
      }
      RankCells part = PlaceBlocks(t.ranks[r].compute, scale, span_cols[k], win.spans[k].first, win.spans[k].second,
                                   k + 1 == win.spans.size());
      rc.cell.insert(rc.cell.end(), part.cell.begin(), part.cell.end());
      rc.mixed_microbatch.insert(rc.mixed_microbatch.end(), part.mixed_microbatch.begin(), part.mixed_microbatch.end());
    }
    cells.push_back(std::move(rc));
    any_mixed |= std::count(cells.back().cell.begin(), cells.back().cell.end(), kMixed) > 0;
  }
  const bool inline_numbers = LabelsFitInline(t, cells);
  const int digit_lines = Digits(max_microbatch);  // ':' lines per rank when numbers are not inline

  for (int r = 0; r < t.pp_size; ++r) {
    const auto& blocks = t.ranks[r].compute;
    const RankCells& rc = cells[r];
    std::vector<std::string> digits(inline_numbers ? 0 : digit_lines, std::string(ncols, ' '));
    std::string line = StrFormat("r%-2d |", r);
    for (int c = 0; c < ncols;) {
      const int run = RunLength(rc.cell, c);
      std::string text;
      if (rc.cell[c] == kIdle) {
        text.assign(run, '.');
      } else if (rc.cell[c] == kCut) {
        text.assign(run, '~');
      } else if (rc.cell[c] == kMixed) {
        text.assign(run, '*');
        if (!inline_numbers)
          for (int i = c; i < c + run; ++i)
            if (rc.mixed_microbatch[i] >= 0) PutDigits(rc.mixed_microbatch[i], i, &digits);
      } else if (IsOverlap(blocks[rc.cell[c]].action.type)) {
        // An overlapped pair: its F half then its B half, joined by '&'
        // ("F7ff&B3bb"), each half in its own colour: one action, two halves.
        const Action& a = blocks[rc.cell[c]].action;
        const int half = (run + 1) / 2;
        std::string f = "F", b = run - half >= 1 ? "&" : "";
        if (run - half >= 2) b += "B";
        if (inline_numbers) {
          f += std::to_string(a.microbatch);
          b += std::to_string(a.b_microbatch);
        } else {
          PutDigits(a.microbatch, c, &digits);
          if (run - half >= 2) PutDigits(a.b_microbatch, c + half + 1, &digits);
        }
        f.resize(std::max<size_t>(f.size(), half), 'f');
        f.resize(half);
        b.resize(std::max<size_t>(b.size(), run - half), 'b');
        b.resize(run - half);
        text = options.color ? std::string(AnsiColor(ActionType::kF)) + f + AnsiColor(ActionType::kB) + b + "\x1b[0m"
                             : f + b;
        any_pair = true;
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
  if (any_pair)
    out += "  F7ff&B3bb = an overlapped pair (OVERLAP_F_B): F of one stage and B of another run as one action\n";
  if (any_mixed)
    out += "  * = several actions in one column; the ':' lines under a * give the microbatch they share, if one\n";
  if (win.Compressed()) {
    int hidden = 0;
    for (int r = 0; r < t.pp_size; ++r) hidden = std::max(hidden, win.HiddenActions(t, r));
    out += StrFormat("  ~~~ = %s of steady state not drawn (up to %d actions per rank)\n",
                     FormatSeconds(win.HiddenEnd() - win.HiddenBegin()).c_str(), hidden);
  }
  out += "  compute only: SEND/RECV are not drawn (see --format html or trace)\n";
  out += StrFormat("makespan %s, steady step %s, bubble ratio %.4f", FormatSeconds(t.makespan_s).c_str(),
                   FormatSeconds(t.steady_step_s).c_str(), t.bubble_ratio);
  if (t.memory_limit_bytes) out += ", memory limit " + FormatMemory(t, *t.memory_limit_bytes) + " per rank";
  out += "\n";
  for (int r = 0; r < t.pp_size; ++r) {
    const TimelineRank& tr = t.ranks[r];
    out += StrFormat("  rank %d: busy %s, idle %s (%.1f%%)", r, FormatSeconds(tr.busy_s).c_str(),
                     FormatSeconds(tr.idle_s).c_str(), t.makespan_s > 0 ? 100.0 * tr.idle_s / t.makespan_s : 0.0);
    if (!tr.memory.empty()) out += ", peak memory " + FormatMemory(t, tr.peak_memory_bytes);
    out += "\n";
  }
  out += RenderStaticMemoryText(t);
  return out;
}

std::string RenderStaticMemoryText(const Timeline& t) {
  const StaticBreakdown& sb = t.static_memory;
  if (sb.ranks.empty()) return "";
  std::string out = "static memory per rank (params, grads and optimizer state; by layer: " + sb.method + "):\n";
  for (const RankStatic& r : sb.ranks) {
    std::string stages, parts;
    for (const StageStatic& st : r.stages) stages += (stages.empty() ? "" : ",") + std::to_string(st.stage);
    if (sb.by_layer) {
      auto add = [&](const std::string& p) { parts += (parts.empty() ? " = " : " + ") + p; };
      if (r.embedding_bytes) add("embedding " + FormatMemory(t, r.embedding_bytes));
      if (r.num_blocks)
        add(StrFormat("%d block%s ", r.num_blocks, r.num_blocks == 1 ? "" : "s") + FormatMemory(t, r.block_bytes));
      if (r.head_bytes) add("head " + FormatMemory(t, r.head_bytes));
    }
    out += StrFormat("  rank %d (stage%s %s): %s%s\n", r.rank, r.stages.size() == 1 ? "" : "s", stages.c_str(),
                     FormatMemory(t, r.bytes).c_str(), parts.c_str());
  }
  return out;
}

}  // namespace pw::viz
