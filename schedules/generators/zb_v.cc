// ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", §6): two stages
// per rank in V placement (Placement::kV: rank r holds stages r and
// 2P - 1 - r), backward split into I and W. The registry refuses any other
// number of stages per rank (--virtual-stages).
//
// The V puts the first and the last stage on rank 0, so the loss gradient
// starts back where the forward began and no rank waits at the turn of the V
// as 1F1B's rank 0 does: with F = I = W per stage the order can be zero-bubble
// at 1F1B's memory (2P stage activations = P microbatches through both of
// the rank's stages).
//
// Warm-up, derived (unit stage costs, comm 0): microbatch 0 reaches rank r's
// second stage (2P - 1 - r) after 2P - 1 - r forwards, and rank r starts at
// time r, so rank r can run 2P - 1 - 2r first-stage forwards, then it
// alternates second-stage and first-stage forwards until its first I; in
// total worker i (1-based) runs 2P - i first-stage and i - 1 second-stage
// forwards (§6). Then the steady state 1F-1I-1W, with W's filling the gaps.
//
// Construction: the order comes from the memory-aware greedy of zb_auto.cc
// (ALGORITHMS.md "ZB-V greedy"): forwards run while inputs are there and the
// memory limit (with room kept for the same microbatches' second-stage
// forwards) allows, which yields the warm-up above; the second stage (the
// returning half of the V) goes first for both F and I; gaps are filled with
// W's; the flag grid (F may overrun a known I, F before I, W in short gaps,
// room for one or all in-flight microbatches, an optional 1F1B-like cap on
// microbatches between F and I) is searched and each candidate
// is scored with Simulate() on the request's per-stage costs (smallest
// steady_step_s, then makespan).
//
// Memory limit: request.memory_limit if set, else ZB-V's default of 1F1B's
// memory, P microbatches through both stages of the rank:
// P x max over ranks of (activation[r] + activation[2P - 1 - r]) (with equal
// stages: 2P stage activations). Infeasible, naming --memory-limit, if not
// even one microbatch fits. Any m >= 1 is valid (small m just has bubbles).
#include <algorithm>

#include "schedules/generators/generators.h"

namespace pw {

StatusOr<Program> GenerateZBV(const ScheduleRequest& req) {
  const int P = req.pp_size;
  if (req.virtual_stages != 2)  // the registry already enforces this
    return Status::InvalidArgument("ZB-V needs exactly 2 stages per rank (--virtual-stages), got " +
                                   std::to_string(req.virtual_stages));
  double limit = 0;
  if (req.memory_limit) {
    limit = *req.memory_limit;
  } else {
    int64_t per_microbatch = 0;  // both stages of the heaviest rank
    for (int r = 0; r < P; ++r)
      per_microbatch =
          std::max(per_microbatch, req.costs.memory[r].activation + req.costs.memory[2 * P - 1 - r].activation);
    limit = static_cast<double>(P) * static_cast<double>(per_microbatch);
  }
  return ZeroBubbleGreedy(req, 2, Placement::kV, limit, "ZB-V");
}

}  // namespace pw
