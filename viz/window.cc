#include "viz/window.h"

#include <algorithm>
#include <limits>

namespace pw::viz {

double TimeWindow::ShownSeconds() const {
  double s = 0;
  for (const auto& [a, b] : spans) s += b - a;
  return s;
}

int TimeWindow::HiddenActions(const Timeline& t, int rank) const {
  int n = 0;
  for (const TimelineBlock& b : t.ranks[rank].compute) n += Hides(b.start, b.end) ? 1 : 0;
  return n;
}

std::string TimeWindow::Describe() const {
  std::string s;
  for (const auto& [a, b] : spans)
    s += (s.empty() ? "" : " and ") + (a == 0 ? std::string("0") : FormatSeconds(a)) + " .. " + FormatSeconds(b);
  return s;
}

TimeWindow FullWindow(const Timeline& t) { return TimeWindow{{{0.0, t.makespan_s}}}; }

double ShortestAction(const Timeline& t) {
  double min_dur = 0;
  for (const TimelineRank& r : t.ranks)
    for (const TimelineBlock& b : r.compute)
      if (b.end > b.start && (min_dur == 0 || b.end - b.start < min_dur)) min_dur = b.end - b.start;
  return min_dur;
}

TimeWindow ChooseWindow(const Timeline& t, double avail_units, double min_units_per_action) {
  TimeWindow full = FullWindow(t);
  const double min_dur = ShortestAction(t);
  if (t.makespan_s <= 0 || min_dur <= 0 || t.num_microbatches <= 0) return full;
  if (t.makespan_s / min_dur * min_units_per_action <= avail_units) return full;
  double warm_end = 0, cool_start = std::numeric_limits<double>::infinity(), period = 0;
  for (const TimelineRank& r : t.ranks) {
    bool seen_backward = false, seen_forward = false;
    double last_f_end = 0;
    for (const TimelineBlock& b : r.compute) {
      const ActionType ty = b.action.type;
      if (!seen_backward && (ty == ActionType::kB || ty == ActionType::kI)) {
        warm_end = std::max(warm_end, b.start);
        seen_backward = true;
      }
      if (ty == ActionType::kF) {
        last_f_end = std::max(last_f_end, b.end);
        seen_forward = true;
      }
    }
    if (!seen_backward) return full;  // forward-only: no steady state to cut
    if (seen_forward) cool_start = std::min(cool_start, last_f_end);
    period = std::max(period, r.busy_s / t.num_microbatches);
  }
  const double head_end = warm_end + kWindowPeriods * period;
  const double tail_start = cool_start - kWindowPeriods * period;
  if (!(tail_start - head_end >= kMinHiddenShare * t.makespan_s)) return full;
  return TimeWindow{{{0.0, head_end}, {tail_start, t.makespan_s}}};
}

}  // namespace pw::viz
