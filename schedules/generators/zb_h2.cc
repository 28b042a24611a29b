// ZB-H2, the second handcrafted zero-bubble schedule (Qi et al. 2024, "Zero
// Bubble Pipeline Parallelism", §2.3, Figure 3 bottom, Table 2). One stage
// per rank, loop placement, backward split into I and W.
//
// ZB-H2 trades memory for the start-up bubble: each rank runs enough forwards
// to stay busy until the gradient of microbatch 0 returns, and holds back
// enough W's to cover the gaps of the steady state.
//
// Warm-up on rank r: w = 2P - 1 - 2r forwards (capped at m). With unit costs
// rank r starts F0 at time r and I0 reaches it at 2P - 1 - r (P - r - 1 more
// forwards down, then P - r input-gradient passes back), so it can run
// 2P - 1 - 2r forwards back to back without a gap; the forwards are there in
// time because rank 0 issues its warm-up forwards back to back.
// Steady state, k = 0, 1, ...: I(k), W(k - 2r) once k >= 2r, F(w + k).
// Rank r holds back 2r W's: its first 2r I's arrive every 2 units (the
// ranks below still run I,F pairs), so it alternates I and F; once the
// stream slows to one microbatch per F+I+W it fills each gap with one W.
// Cool-down: the remaining I's, each with the next W, then the rest of W's.
//
// Memory (activation = wstash = 1): rank r peaks at (2P - 2r - 1) activations
// + 2r wstash = 2P - 1 units (Table 2: (2p - 2i + 1) M_B + (2i - 2) M_W with
// i = r + 1). With unit costs and m >= 2P every rank is busy from its first
// forward to its last W, so steady_step_s (docs/PLAN_FORMAT.md rule 9: the ZB
// paper's "cost" when iterations overlap, §4 post-validation) is exactly 3m
// and the makespan is 3m + P - 1; in general the bubble is
// (P - 1)(T_F + T_I - 2 T_W) (Table 2).
//
// m < 2P (documented choice): the paper requires m >= 2P; we still return a
// valid schedule, the same order with the warm-up capped at m (then rank r's
// peak is min(m, 2P - 1 - 2r) activations plus its held-back W's) and with
// start-up bubbles that the simulator shows. Warm-up counts do not increase
// with r, so inputs are consumed in order and the order cannot deadlock.
//
// Memory limit: the order does not depend on it; GenerateSchedule refuses the
// request (Infeasible, naming --memory-limit and the amount needed) if any
// rank's walk with the request's activation and wstash bytes exceeds it.
#include <algorithm>

#include "schedules/generators/generators.h"

namespace pw {

StatusOr<Program> GenerateZBH2(const ScheduleRequest& req) {
  const int P = req.pp_size, m = req.num_microbatches;
  Program p = MakeEmptyProgram(req, 1, Placement::kLoop);
  for (int r = 0; r < P; ++r) {
    auto& list = p.ranks[r];
    const int warmup = std::min(2 * P - 1 - 2 * r, m);
    const int lag = 2 * r;  // W passes held back on rank r
    int next_w = 0;
    for (int mb = 0; mb < warmup; ++mb) list.push_back(MakeAction(r, ActionType::kF, mb));
    for (int k = 0; k < m; ++k) {
      list.push_back(MakeAction(r, ActionType::kI, k));
      // Steady state: W(k - lag); cool-down (no forwards left): one deferred
      // W after every I.
      int upto = warmup + k < m ? k - lag + 1 : k + 1;
      if (next_w < upto) list.push_back(MakeAction(r, ActionType::kW, next_w++));
      if (warmup + k < m) list.push_back(MakeAction(r, ActionType::kF, warmup + k));
    }
    while (next_w < m) list.push_back(MakeAction(r, ActionType::kW, next_w++));
  }
  return p;  // GenerateSchedule checks the memory limit
}

}  // namespace pw
