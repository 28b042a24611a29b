// Measured vs simulated: per action, per rank bubble, and the critical path
// of each. Both sides are Timelines (a measured trace read by trace_reader.h,
// and the simulation of the plan that was run); nothing is re-simulated here.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "viz/timeline.h"

namespace pw::viz {

// One compute action on both sides (seconds).
struct ActionDiff {
  int rank = 0;
  Action action;
  double measured_start = 0, measured_dur = 0;
  double simulated_start = 0, simulated_dur = 0;
};

// One rank on both sides. Bubble = idle / makespan of that side.
struct RankDiff {
  int rank = 0;
  double measured_busy_s = 0, simulated_busy_s = 0;
  double measured_bubble = 0, simulated_bubble = 0;
  int64_t measured_peak_bytes = 0, simulated_peak_bytes = 0;  // 0 = unknown
};

struct TimelineDiff {
  double measured_makespan_s = 0, simulated_makespan_s = 0;
  double measured_steady_s = 0, simulated_steady_s = 0;
  double measured_bubble = 0, simulated_bubble = 0;
  std::vector<ActionDiff> actions;  // by rank, then the rank's list order
  std::vector<RankDiff> ranks;
  std::vector<CriticalStep> measured_critical, simulated_critical;
};

// Matches every compute action of `measured` with the same action on the same
// rank of `simulated`. InvalidArgument if P differs ("--plan has 4 ranks, the
// trace 2") or a rank's compute actions differ ("rank 1: '1F3' is in the
// trace but not in the plan").
StatusOr<TimelineDiff> DiffTimelines(const Timeline& measured, const Timeline& simulated);

// A plain-text report: totals, per-rank bubble table, the `max_actions`
// actions with the largest |duration difference| (0 = all, in list order),
// and both critical paths.
std::string RenderDiffText(const TimelineDiff& diff, int max_actions = 0);

}  // namespace pw::viz
