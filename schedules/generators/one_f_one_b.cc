// 1F1B, a.k.a. PipeDream-Flush / DAPPLE (Narayanan et al. SC'21 §2.2.1;
// Megatron-LM `get_pp_rank_microbatches`). One stage per rank.
//
// Warm-up: rank r runs w = min(P - r - 1, m) forwards. The first backward on
// rank r needs microbatch 0 to go down the remaining P - r - 1 ranks and its
// gradient to come back, time in which rank r can do exactly P - r - 1 more
// forwards (unit F); one more would only add memory.
// Steady state: alternate one forward and one backward (m - w pairs).
// Cool-down: the last w backwards.
// Live activations on rank r peak at w + 1 = min(P - r, m). Any m >= 1 works:
// with m < P the warm-up is simply capped at m (all forwards, then all
// backwards) and the makespan is still 3(m + P - 1) with unit costs.
#include <algorithm>

#include "schedules/generators/generators.h"

namespace pw {

StatusOr<Program> Generate1F1B(const ScheduleRequest& req) {
  const int P = req.pp_size, m = req.num_microbatches;
  Program p = MakeEmptyProgram(req, 1, Placement::kLoop);
  for (int r = 0; r < P; ++r) {
    auto& list = p.ranks[r];
    const int warmup = std::min(P - r - 1, m);
    for (int mb = 0; mb < warmup; ++mb) list.push_back(MakeAction(r, ActionType::kF, mb));
    for (int i = 0; i < m - warmup; ++i) {
      list.push_back(MakeAction(r, ActionType::kF, warmup + i));
      list.push_back(MakeAction(r, ActionType::kB, i));
    }
    for (int mb = m - warmup; mb < m; ++mb) list.push_back(MakeAction(r, ActionType::kB, mb));
  }
  return p;
}

}  // namespace pw
