// Certified optimal schedules for small pipelines: the exact scheduling
// problem of the split-backward (F, I, W) pipeline with one stage per rank
// (loop placement, as ZB-H1/ZB-H2/zb-auto), written as a mixed-integer
// linear program after the zero-bubble paper's ILP (Qi et al. 2024, "Zero
// Bubble Pipeline Parallelism", arXiv 2401.10241, Appendix G) and solved
// with COIN-OR CBC (Debian coinor-libcbc-dev). docs/ALGORITHMS.md, section
// "Certified optima", states the model.
//
// The only file that uses CBC; it is linked into the `pipewright` CLI and
// the tests (library pw_optimal), not into the installed torch-free
// libraries, so their consumers do not need CBC.
#pragma once

#include <string>

#include "base/status.h"
#include "schedules/program.h"
#include "schedules/registry.h"

namespace pw {

// The largest problem we build: stages x microbatches (P*m). Each stage
// holds 3m passes and the model one binary per unordered pair of passes on a
// stage, ~4.5 P m^2 binaries; beyond P*m = 32 (e.g. P = 4, m = 8: ~1100
// binaries) CBC no longer proves optimality in seconds.
inline constexpr int kMaxOptimalStageMicrobatches = 32;

// Solver settings. `time_limit_s`: wall-clock seconds CBC may search, > 0
// and finite (the CLI's --time-limit; default 60).
struct OptimalOptions {
  double time_limit_s = 60.0;
};

// The solved problem. Times in seconds of the request's costs.
struct OptimalResult {
  // Compute-only order (F/I/W), loop placement, one stage per rank: passes
  // ValidateComputeOrder; each rank's list is its passes by start time.
  Program program;
  double objective_s = 0;  // the MILP objective of CBC's incumbent (its makespan)
  // Simulate() of `program`: each rank runs its list as soon as possible, so
  // this is <= objective_s, and equal (to rounding) when proven optimal.
  double makespan_s = 0;
  double bound_s = 0;  // best proven lower bound on the optimal makespan (<= makespan_s)
  // (makespan - bound) / makespan, >= 0; ~0 when proven optimal.
  double gap = 0;
  bool proven_optimal = false;
  bool time_limit_reached = false;
  // The warm start: the best heuristic order (its family name and simulated
  // makespan), given to CBC as its first incumbent; objective_s <= it.
  std::string warm_start_schedule;
  double warm_start_makespan_s = 0;
  double solve_s = 0;    // wall-clock seconds spent in CBC
  int num_binaries = 0;  // order variables
  int num_columns = 0;   // all variables
  int num_rows = 0;      // constraints
};

// Checks a request before any work: P >= 1, m >= 1, v = 1 (or 0 = default),
// P*m <= kMaxOptimalStageMicrobatches (InvalidArgument naming --pp,
// --num-microbatches and the limit), dp_size 1, costs of size P when given, and
// options.time_limit_s > 0 and finite (InvalidArgument naming --time-limit).
Status CheckOptimalRequest(const ScheduleRequest& request, const OptimalOptions& options);

// Builds and solves the MILP of `request` (pp_size P, num_microbatches m,
// costs per stage: f, i, w seconds, activation/wstash bytes, message
// seconds CommModel::MessageSeconds(send_forward/send_backward); empty =
// unit costs; memory limit per rank RankMemoryLimit, activation bytes
// without static bytes, none = unlimited).
//
// Model (arXiv 2401.10241 Appendix G, in our notation): one continuous end
// time E per pass (F, I, W of stage s, microbatch k); precedence F(s-1,k) ->
// F(s,k) and I(s+1,k) -> I(s,k) with the message time between ranks,
// F(s,k) -> I(s,k) -> W(s,k) on a stage; one binary order variable O per
// unordered pair of passes on a stage whose order is not implied, with
// big-M disjunctions so that passes on a rank never overlap; the memory
// limit at each pass: its own change plus the changes of the passes ordered
// before it (docs/PLAN_FORMAT.md rule 7: +activation at F, wstash -
// activation at I, -wstash at W) stays within the rank's limit. Objective:
// the makespan (latest end of any pass), which is what Simulate() reports
// for the order run as soon as possible (see docs/ALGORITHMS.md for why not
// the paper's per-rank span). Symmetry breaking that keeps an optimum:
// stage 0's forwards in microbatch order (microbatches are interchangeable)
// and, per stage, W's in the order of their I's (W's of a stage are
// interchangeable and nothing waits on them).
//
// Warm start: the best of zb-auto (searched at the limit), ZB-H1, ZB-H2 and
// 1F1B (its B's split into I then W) that fits the limit, so the result is
// never worse than it. Errors: those of CheckOptimalRequest; Infeasible
// naming --memory-limit when no heuristic fits the limit (one microbatch in
// flight fits every order, so this means the limit is below what any order
// needs); Internal if CBC returns no solution.
StatusOr<OptimalResult> SolveOptimalSchedule(const ScheduleRequest& request, const OptimalOptions& options);

}  // namespace pw
