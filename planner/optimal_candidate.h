// `pipewright plan --try-optimal`: after the planner's search, the certified
// optimum (optimal_milp.h) of the best one-stage-per-rank candidate's layer
// split, costs and per-rank memory room replaces the choice when its
// makespan is shorter than every candidate's.
#pragma once

#include <string>

#include "base/status.h"
#include "planner/optimal_milp.h"
#include "planner/planner.h"

namespace pw {

// Tries the optimum on `result` (a SearchPlans result for `options`). The
// base is the best feasible candidate with v = 1 (its split, stage costs
// and, under a memory limit, each rank's room for activations: the limit
// less the rank's static bytes and recompute workspace, as the planner
// gives memory-adaptive generators). It is skipped (result unchanged, the
// returned note says why) for --objective steady (the MILP minimises the
// makespan), data parallelism (REDUCE_GRAD is not modelled), P x m above
// kMaxOptimalStageMicrobatches, or no feasible v = 1 candidate. If the
// optimum's simulated makespan is below the chosen candidate's step by more
// than 1e-9 relative and its peaks (+ workspace) fit the limit, a candidate
// "optimal" (the base's split and batch, the optimum's lowered order,
// costs and simulation) is put first and chosen. Returns a one-line note:
// what was solved, the optimum, bound and gap, and whether it was taken.
// Errors: those of SolveOptimalSchedule other than Infeasible (which is a
// note), e.g. a bad --time-limit.
StatusOr<std::string> TryOptimalCandidate(SearchResult* result, const PlannerOptions& options,
                                          const OptimalOptions& optimal);

}  // namespace pw
