// Interleaved 1F1B (Narayanan et al. SC'21 §2.2.2), in Megatron-LM's
// depth-first order (`get_schedule_table`, `get_pp_rank_microbatches`).
// Rank r holds v stages in loop placement: local stage k is global stage
// k*P + r.
//
// Order of forward passes on every rank: microbatches in groups of G = P
// (the last group takes the remainder m mod P); within a group, all of local
// stage 0, then all of local stage 1, ... Backward passes follow the same
// table with local stages reversed (the last stage's gradients come first).
//
// Warm-up on rank r: 2(P - r - 1) + (v - 1)G forwards, capped at m*v. The
// first backward on rank r is of the rank's last stage, microbatch 0; the v-1
// earlier local stages must have run the first group (v-1)G forwards), and
// each rank below r+1 ... P-1 adds one forward for the trip down and one for
// the gradient's trip back (2(P - r - 1)). Then one forward, one backward
// (steady state), then the remaining backwards (cool-down).
//
// Unlike Megatron (which refuses 0 < m mod G < P) and PyTorch (which needs
// m divisible by max(1, m // P)), any m >= 1 is accepted: a short last group
// (or m < P, when the single group is m long) only adds dependency bubbles,
// which the simulator shows; every such order is checked deadlock-free by the
// property sweep. v = 1 is delegated to 1F1B (Megatron's interleaved formula
// would give a warm-up of 2(P - r - 1), doubling rank 0's activation peak).
#include <algorithm>

#include "schedules/generators/generators.h"

namespace pw {

namespace {

// (local stage, microbatch) pairs in Megatron's depth-first table order.
std::vector<std::pair<int, int>> ScheduleTable(int m, int v, int group, bool backward) {
  std::vector<std::pair<int, int>> table;
  table.reserve(static_cast<size_t>(m) * v);
  for (int start = 0; start < m; start += group) {
    int end = std::min(start + group, m);
    for (int k = 0; k < v; ++k) {
      int local = backward ? v - 1 - k : k;
      for (int mb = start; mb < end; ++mb) table.emplace_back(local, mb);
    }
  }
  return table;
}

}  // namespace

StatusOr<Program> GenerateInterleaved1F1B(const ScheduleRequest& req) {
  const int P = req.pp_size, m = req.num_microbatches, v = req.virtual_stages;
  if (v == 1) {
    ScheduleRequest one = req;
    one.schedule = "1f1b";
    PW_ASSIGN_OR_RETURN(Program p, Generate1F1B(one));
    return p;
  }
  Program p = MakeEmptyProgram(req, v, Placement::kLoop);
  const int group = P;
  const auto fwd = ScheduleTable(m, v, group, false);
  const auto bwd = ScheduleTable(m, v, group, true);
  const int total = m * v;
  for (int r = 0; r < P; ++r) {
    auto& list = p.ranks[r];
    const int warmup = std::min(2 * (P - r - 1) + (v - 1) * group, total);
    auto F = [&](int idx) { list.push_back(MakeAction(fwd[idx].first * P + r, ActionType::kF, fwd[idx].second)); };
    auto B = [&](int idx) { list.push_back(MakeAction(bwd[idx].first * P + r, ActionType::kB, bwd[idx].second)); };
    for (int i = 0; i < warmup; ++i) F(i);
    for (int i = 0; i < total - warmup; ++i) {
      F(warmup + i);
      B(i);
    }
    for (int i = total - warmup; i < total; ++i) B(i);
  }
  return p;
}

}  // namespace pw
