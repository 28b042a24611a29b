// The part of a step a view draws. A short step is drawn whole; a long one
// (many microbatches) as a window: the warm-up and the first steady-state
// periods, a compressed middle marked as such, then the last steady-state
// periods and the cool-down. Every view (terminal, SVG, HTML) uses the same
// rule, so they show the same actions.
//
// The rule (all times from the timeline, nothing re-simulated):
//   warm-up end      = max over ranks of the start of the rank's first B or I
//                      (every rank has started its steady F/B alternation);
//   cool-down start  = min over ranks of the end of the rank's last F;
//   period           = max over ranks of busy_s / m (one microbatch on the
//                      busiest rank: one steady-state period);
//   head = [0, warm-up end + k periods], tail = [cool-down start - k periods,
//   makespan], k = 2. The middle is compressed only when the full drawing
//   is too dense (the caller's test: the shortest action would get fewer
//   than its minimum units) and the middle is at least 25 % of the makespan;
//   otherwise (or with no backward at all, e.g. forward-only) the window is
//   the whole step.
//
// Units: seconds.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "viz/timeline.h"

namespace pw::viz {

struct TimeWindow {
  // Shown intervals of [0, makespan], in order, non-overlapping: one (the
  // whole step) or two (head and tail; the middle between them is hidden).
  std::vector<std::pair<double, double>> spans;
  bool Compressed() const { return spans.size() > 1; }
  // The hidden middle [HiddenBegin, HiddenEnd); empty when not compressed.
  double HiddenBegin() const { return Compressed() ? spans[0].second : 0.0; }
  double HiddenEnd() const { return Compressed() ? spans[1].first : 0.0; }
  double ShownSeconds() const;
  // Compute actions of `rank` lying wholly inside the hidden middle.
  int HiddenActions(const Timeline& t, int rank) const;
  // True when [start, end] lies wholly in the hidden middle.
  bool Hides(double start, double end) const { return Compressed() && start >= HiddenBegin() && end <= HiddenEnd(); }
  // "0 .. 12.3 s and 48.1 .. 60.7 s" or "0 .. 60.7 s".
  std::string Describe() const;
};

inline constexpr int kWindowPeriods = 2;         // steady-state periods kept on each side of the cut
inline constexpr double kMinHiddenShare = 0.25;  // compress only when at least this share of the makespan is hidden

// The whole step [0, makespan].
TimeWindow FullWindow(const Timeline& t);

// The window for a drawing `avail_units` wide (columns or pixels) that
// wants at least `min_units_per_action` units for the shortest compute
// action: the whole step if it fits that way, else the rule above.
TimeWindow ChooseWindow(const Timeline& t, double avail_units, double min_units_per_action);

// The shortest compute action (seconds, > 0), or 0 if there is none.
double ShortestAction(const Timeline& t);

}  // namespace pw::viz
