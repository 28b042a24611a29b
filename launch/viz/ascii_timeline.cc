#include "launch/viz/ascii_timeline.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace pw::viz {

namespace {

constexpr int kLabelWidth = 5;     // "r12 |"
constexpr int kMaxColsPerMin = 4;  // columns given to the shortest action when there is room

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

}  // namespace

std::string RenderAscii(const Timeline& t, const AsciiOptions& options) {
  const int width = std::max(options.width, 40);
  const int avail = width - kLabelWidth - 1;
  double min_dur = 0;
  for (const TimelineRank& r : t.ranks)
    for (const TimelineBlock& b : r.compute)
      if (b.end > b.start && (min_dur == 0 || b.end - b.start < min_dur)) min_dur = b.end - b.start;
  std::string out = Fmt("%s: %s, P=%d ranks, S=%d stages, m=%d microbatches\n", t.title.c_str(), t.kind.c_str(),
                        t.pp_size, t.num_stages, t.num_microbatches);
  if (t.makespan_s <= 0 || min_dur <= 0) return out + "(no compute time to draw)\n";

  double scale;  // columns per second
  double units = t.makespan_s / min_dur;
  if (units <= avail + 1e-9) {
    int cols = std::min(kMaxColsPerMin, std::max(1, static_cast<int>(std::floor(avail / units + 1e-9))));
    scale = cols / min_dur;
    out += Fmt("time: 1 column = %s (shortest action %s = %d column%s)\n", FormatSeconds(1 / scale).c_str(),
               FormatSeconds(min_dur).c_str(), cols, cols == 1 ? "" : "s");
  } else {
    scale = avail / t.makespan_s;
    out += Fmt("time COMPRESSED to fit %d columns: 1 column = %s, shorter than the shortest action (%s); "
               "a column shows what covers most of it\n",
               width, FormatSeconds(1 / scale).c_str(), FormatSeconds(min_dur).c_str());
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

  for (int r = 0; r < t.pp_size; ++r) {
    const auto& blocks = t.ranks[r].compute;
    // owner[c] = index of the block covering most of column c, or -1 (idle).
    std::vector<int> owner(ncols, -1);
    std::vector<double> best(ncols, 0.0), covered(ncols, 0.0);
    for (int k = 0; k < static_cast<int>(blocks.size()); ++k) {
      double s = blocks[k].start * scale, e = blocks[k].end * scale;
      for (int c = std::max(0, static_cast<int>(std::floor(s))); c < ncols && c < e; ++c) {
        double ov = std::min(e, c + 1.0) - std::max(s, double(c));
        if (ov <= 1e-12) continue;
        covered[c] += ov;
        if (ov > best[c] + 1e-12) {
          best[c] = ov;
          owner[c] = k;
        }
      }
    }
    for (int c = 0; c < ncols; ++c)
      if (owner[c] >= 0 && 1.0 - covered[c] > best[c] + 1e-12) owner[c] = -1;
    std::string line = Fmt("r%-2d |", r);
    int c = 0;
    while (c < ncols) {
      int k = owner[c], run = 1;
      while (c + run < ncols && owner[c + run] == k) ++run;
      std::string text;
      if (k < 0) {
        text.assign(run, '.');
      } else {
        const Action& a = blocks[k].action;
        char letter = ActionTypeName(a.type)[0];
        // Letter + microbatch when the whole number fits, else the letter
        // alone: never a truncated number.
        text = std::string(1, letter) + std::to_string(a.microbatch);
        if (static_cast<int>(text.size()) > run) text.resize(1);
        text.append(run - text.size(), static_cast<char>(std::tolower(letter)));
        if (options.color) text = std::string(AnsiColor(a.type)) + text + "\x1b[0m";
      }
      line += text;
      c += run;
    }
    out += line + "|\n";
  }

  out += "legend: F forward, B full backward, I input-gradient backward, W weight-gradient backward "
         "(letter + microbatch), . idle\n";
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
