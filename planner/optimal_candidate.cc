#include "planner/optimal_candidate.h"

#include <cstdio>

#include "schedules/pipeline.h"

namespace pw {

StatusOr<std::string> TryOptimalCandidate(SearchResult* result, const PlannerOptions& options,
                                          const OptimalOptions& optimal) {
  if (options.objective != Objective::kMakespan)
    return std::string("--try-optimal: skipped: the optimum minimises the makespan, not --objective steady");
  if (options.dp_size > 1)
    return std::string("--try-optimal: skipped: data parallelism (REDUCE_GRAD) is not part of the exact model");
  int base = -1;
  for (size_t i = 0; i < result->candidates.size(); ++i) {
    const Candidate& c = result->candidates[i];
    if (c.feasible && c.artifacts && c.virtual_stages == 1 && c.artifacts->lowered.dp_size == 1) {
      base = static_cast<int>(i);
      break;  // ranked: the first is the best
    }
  }
  if (base < 0 || result->chosen < 0)
    return std::string("--try-optimal: skipped: no feasible candidate with one stage per rank");
  const Candidate& b = result->candidates[base];
  const CandidateArtifacts& a = *b.artifacts;
  const int P = a.lowered.pp_size;
  ScheduleRequest req;
  req.schedule = "optimal";
  req.pp_size = P;
  req.num_microbatches = b.batch.num_microbatches;
  req.virtual_stages = 1;
  req.costs = a.costs;
  std::vector<int64_t> workspace(P, 0);
  for (int r = 0; r < P; ++r) workspace[r] = b.peak_bytes[r] - a.sim.per_rank[r].peak_memory_bytes;
  if (result->memory_limit_bytes) {
    for (int r = 0; r < P; ++r)
      req.rank_memory_limits.push_back(static_cast<double>(
          std::max<int64_t>(*result->memory_limit_bytes - a.sim.per_rank[r].start_memory_bytes - workspace[r], 0)));
  }
  if (int64_t{P} * req.num_microbatches > kMaxOptimalStageMicrobatches)
    return "--try-optimal: skipped: P x m = " + std::to_string(P) + " x " + std::to_string(req.num_microbatches) +
           " is above the limit of " + std::to_string(kMaxOptimalStageMicrobatches);
  PW_RETURN_IF_ERROR(CheckOptimalRequest(req, optimal));
  StatusOr<OptimalResult> res = SolveOptimalSchedule(req, optimal);
  if (!res.ok()) {
    if (res.status().code() == StatusCode::kInfeasible) return "--try-optimal: skipped: " + res.status().message();
    return res.status();
  }
  const Candidate& chosen = result->candidates[result->chosen];
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "--try-optimal: split of %s (v = 1), P = %d, m = %d: optimum %.6g s, bound %.6g s, gap %.3g%% (%s, "
                "%.2f s in CBC); chosen %s %.6g s",
                b.schedule.c_str(), P, req.num_microbatches, res->makespan_s, res->bound_s, 100 * res->gap,
                res->proven_optimal ? "proven" : "time limit", res->solve_s, chosen.schedule.c_str(), chosen.step_s);
  std::string note = buf;
  if (!(res->makespan_s < chosen.step_s * (1 - 1e-9))) return note + ": kept (the optimum is not shorter)";
  PipelineFailure failure;
  StatusOr<PipelineResult> run = SimulateOrder(res->program, a.costs, &failure);
  if (!run.ok()) return Status::Internal("--try-optimal: the optimum's order: " + run.status().ToString());
  Candidate opt = b;
  opt.schedule = "optimal";
  opt.makespan_s = run->sim.makespan_s;
  opt.steady_step_s = run->sim.steady_step_s;
  opt.step_s = run->sim.makespan_s;
  opt.bubble_ratio = run->sim.bubble_ratio;
  opt.max_peak_bytes = 0;
  for (int r = 0; r < P; ++r) {
    opt.peak_bytes[r] = run->sim.per_rank[r].peak_memory_bytes + workspace[r];
    opt.max_peak_bytes = std::max(opt.max_peak_bytes, opt.peak_bytes[r]);
    if (result->memory_limit_bytes && opt.peak_bytes[r] > *result->memory_limit_bytes)
      return note + ": kept (rank " + std::to_string(r) + " would exceed the memory limit)";
  }
  auto art = std::make_shared<CandidateArtifacts>(a);
  art->lowered = run->lowered;
  art->sim = run->sim;
  opt.artifacts = art;
  result->candidates.insert(result->candidates.begin(), opt);
  result->chosen = 0;
  return note + ": taken";
}

}  // namespace pw
