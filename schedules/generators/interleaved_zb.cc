// Interleaved zero bubble (interleaved-zb): loop placement with v >= 2 stages
// per rank (rank r holds stages r, r + P, ...), as Interleaved 1F1B
// (Narayanan et al. SC'21 §2.2), and the backward split into I and W with the
// W's moved into the bubbles, as the zero-bubble schedules (Qi et al. 2024,
// "Zero Bubble Pipeline Parallelism", §2-3). PyTorch's
// ScheduleInterleavedZeroBubble is of this family.
//
// Memory: by default the activation memory Interleaved 1F1B needs for the
// same costs (each rank's largest walk peak, docs/PLAN_FORMAT.md rule 7, with
// every B split in place), so the family trades no memory for its smaller
// bubble, as ZB-H1 does against 1F1B; a request's memory limit replaces it.
//
// Two candidates, each simulated with the request's costs; the smaller
// steady_step_s wins, then the smaller makespan, ties keep the first:
// 1. Interleaved 1F1B's order with each B split in place into I then W: the
//    same timeline as Interleaved 1F1B (a W right after its I), always valid,
//    and within the default limit by construction.
// 2. The zero-bubble list scheduler of zb_auto.cc (ZeroBubbleGreedy) in loop
//    placement with v stages per rank under the limit: forwards while inputs
//    are there and memory allows, the later stage's I first, W's into the
//    gaps, its flag grid searched.
// Any m >= 1 (small m just has bubbles).
#include <algorithm>
#include <vector>

#include "schedules/generators/generators.h"
#include "schedules/simulate.h"

namespace pw {

namespace {

// `program` with every B replaced by I then W of the same stage and microbatch.
Program SplitEveryBackward(const Program& program) {
  Program out = program;
  for (auto& list : out.ranks) {
    std::vector<Action> split;
    split.reserve(list.size() + list.size() / 2);
    for (const Action& a : list) {
      if (a.type == ActionType::kB) {
        split.push_back(MakeAction(a.stage, ActionType::kI, a.microbatch));
        split.push_back(MakeAction(a.stage, ActionType::kW, a.microbatch));
      } else {
        split.push_back(a);
      }
    }
    list = std::move(split);
  }
  return out;
}

}  // namespace

StatusOr<Program> GenerateInterleavedZB(const ScheduleRequest& req) {
  const int P = req.pp_size, v = req.virtual_stages;
  ScheduleRequest base_req = req;
  base_req.schedule = "interleaved-1f1b";
  base_req.memory_limit.reset();
  base_req.rank_memory_limits.clear();
  PW_ASSIGN_OR_RETURN(Program base, GenerateInterleaved1F1B(base_req));
  Program split = SplitEveryBackward(base);
  StatusOr<SimResult> split_sim = Simulate(split, req.costs);
  if (!split_sim.ok())
    return Status::Internal("Interleaved ZB: the split interleaved order: " + split_sim.status().message());
  int64_t interleaved_peak = 0;  // activation bytes, the largest rank's
  for (int r = 0; r < P; ++r)
    interleaved_peak = std::max(interleaved_peak,
                                split_sim->per_rank[r].peak_memory_bytes - split_sim->per_rank[r].start_memory_bytes);
  const std::vector<double> limits = RankLimits(req, static_cast<double>(interleaved_peak));
  const bool split_fits = FitsMemoryLimits(*split_sim, limits);
  StatusOr<Program> greedy = ZeroBubbleGreedy(req, v, Placement::kLoop, limits, "Interleaved ZB");
  if (!greedy.ok()) {
    if (greedy.status().code() != StatusCode::kInfeasible || !split_fits) return greedy.status();
    return split;
  }
  if (!split_fits) return greedy;
  PW_ASSIGN_OR_RETURN(SimResult greedy_sim, Simulate(*greedy, req.costs));
  const double tol = 1e-9 * std::max(1.0, greedy_sim.steady_step_s);
  const bool split_better = split_sim->steady_step_s < greedy_sim.steady_step_s - tol ||
                            (split_sim->steady_step_s <= greedy_sim.steady_step_s + tol &&
                             split_sim->makespan_s < greedy_sim.makespan_s - tol);
  return split_better ? split : *greedy;
}

}  // namespace pw
