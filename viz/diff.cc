#include "viz/diff.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace pw::viz {

StatusOr<TimelineDiff> DiffTimelines(const Timeline& measured, const Timeline& simulated) {
  if (measured.pp_size != simulated.pp_size)
    return Status::InvalidArgument("the plan has " + std::to_string(simulated.pp_size) + " ranks, the trace " +
                                   std::to_string(measured.pp_size));
  TimelineDiff d;
  d.measured_makespan_s = measured.makespan_s;
  d.simulated_makespan_s = simulated.makespan_s;
  d.measured_steady_s = measured.steady_step_s;
  d.simulated_steady_s = simulated.steady_step_s;
  d.measured_bubble = measured.bubble_ratio;
  d.simulated_bubble = simulated.bubble_ratio;
  for (int r = 0; r < measured.pp_size; ++r) {
    const TimelineRank& mr = measured.ranks[r];
    const TimelineRank& sr = simulated.ranks[r];
    std::map<std::string, const TimelineBlock*> sim_of;
    for (const TimelineBlock& b : sr.compute) sim_of[b.action.ToString()] = &b;
    for (const TimelineBlock& b : mr.compute) {
      auto it = sim_of.find(b.action.ToString());
      if (it == sim_of.end())
        return Status::InvalidArgument("rank " + std::to_string(r) + ": '" + b.action.ToString() +
                                       "' is in the trace but not in the plan");
      d.actions.push_back(
          {r, b.action, b.start, b.end - b.start, it->second->start, it->second->end - it->second->start});
      sim_of.erase(it);
    }
    if (!sim_of.empty())
      return Status::InvalidArgument("rank " + std::to_string(r) + ": '" + sim_of.begin()->first +
                                     "' is in the plan but not in the trace");
    RankDiff rd;
    rd.rank = r;
    rd.measured_busy_s = mr.busy_s;
    rd.simulated_busy_s = sr.busy_s;
    rd.measured_bubble = measured.makespan_s > 0 ? mr.idle_s / measured.makespan_s : 0;
    rd.simulated_bubble = simulated.makespan_s > 0 ? sr.idle_s / simulated.makespan_s : 0;
    rd.measured_peak_bytes = mr.memory.empty() ? 0 : mr.peak_memory_bytes;
    rd.simulated_peak_bytes = sr.memory.empty() ? 0 : sr.peak_memory_bytes;
    d.ranks.push_back(rd);
  }
  d.measured_critical = CriticalPath(measured);
  d.simulated_critical = CriticalPath(simulated);
  return d;
}

namespace {

std::string Pct(double measured, double simulated) {
  if (simulated == 0) return measured == 0 ? "+0.0%" : "n/a";
  return StrFormat("%+.1f%%", 100.0 * (measured - simulated) / simulated);
}

std::string PathText(const std::vector<CriticalStep>& path) {
  std::string s;
  int rank = -1;
  for (const CriticalStep& c : path) {
    if (c.rank != rank) {
      s += (s.empty() ? "" : " | ") + StrFormat("r%d:", c.rank);
      rank = c.rank;
    }
    s += " " + c.action.ToString();
  }
  return s;
}

}  // namespace

std::string RenderDiffText(const TimelineDiff& d, int max_actions) {
  std::string out;
  out += StrFormat("%-14s %14s %14s %9s\n", "", "measured", "simulated", "diff");
  out += StrFormat("%-14s %14s %14s %9s\n", "makespan", FormatSeconds(d.measured_makespan_s).c_str(),
                   FormatSeconds(d.simulated_makespan_s).c_str(),
                   Pct(d.measured_makespan_s, d.simulated_makespan_s).c_str());
  out += StrFormat("%-14s %14s %14s %9s\n", "steady step", FormatSeconds(d.measured_steady_s).c_str(),
                   FormatSeconds(d.simulated_steady_s).c_str(), Pct(d.measured_steady_s, d.simulated_steady_s).c_str());
  out += StrFormat("%-14s %14.4f %14.4f %+9.4f\n", "bubble ratio", d.measured_bubble, d.simulated_bubble,
                   d.measured_bubble - d.simulated_bubble);
  out += "\nper rank (bubble = idle / makespan):\n";
  out += StrFormat("%-5s %12s %12s %9s %10s %10s %9s\n", "rank", "busy meas", "busy sim", "diff", "bubble me",
                   "bubble sim", "diff");
  for (const RankDiff& r : d.ranks)
    out += StrFormat("%-5d %12s %12s %9s %10.4f %10.4f %+9.4f\n", r.rank, FormatSeconds(r.measured_busy_s).c_str(),
                     FormatSeconds(r.simulated_busy_s).c_str(), Pct(r.measured_busy_s, r.simulated_busy_s).c_str(),
                     r.measured_bubble, r.simulated_bubble, r.measured_bubble - r.simulated_bubble);
  std::vector<ActionDiff> acts = d.actions;
  if (max_actions > 0 && static_cast<int>(acts.size()) > max_actions) {
    std::stable_sort(acts.begin(), acts.end(), [](const ActionDiff& a, const ActionDiff& b) {
      return std::fabs(a.measured_dur - a.simulated_dur) > std::fabs(b.measured_dur - b.simulated_dur);
    });
    acts.resize(max_actions);
    out += StrFormat("\nthe %d actions whose duration differs most:\n", max_actions);
  } else {
    out += "\nper action:\n";
  }
  out += StrFormat("%-5s %-9s %12s %12s %12s %12s %9s\n", "rank", "action", "start meas", "start sim", "dur meas",
                   "dur sim", "dur diff");
  for (const ActionDiff& a : acts)
    out += StrFormat("%-5d %-9s %12s %12s %12s %12s %9s\n", a.rank, a.action.ToString().c_str(),
                     FormatSeconds(a.measured_start).c_str(), FormatSeconds(a.simulated_start).c_str(),
                     FormatSeconds(a.measured_dur).c_str(), FormatSeconds(a.simulated_dur).c_str(),
                     Pct(a.measured_dur, a.simulated_dur).c_str());
  out += StrFormat("\ncritical path, measured (%zu actions): %s\n", d.measured_critical.size(),
                   PathText(d.measured_critical).c_str());
  out += StrFormat("critical path, simulated (%zu actions): %s\n", d.simulated_critical.size(),
                   PathText(d.simulated_critical).c_str());
  return out;
}

}  // namespace pw::viz
