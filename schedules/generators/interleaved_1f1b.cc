// Interleaved 1F1B (Narayanan et al. SC'21 §2.2.2), in Megatron-LM's
// depth-first order (`get_schedule_table`, `get_pp_rank_microbatches`).
// Rank r holds v stages in loop placement: local stage k is global stage
// k*P + r.
//
// Order of forward passes on every rank: microbatches in groups (Megatron's
// `microbatch_group_size_per_vp_stage`, default G = P); within a group, all
// of local stage 0, then all of local stage 1, ... Backward passes follow the
// same table with local stages reversed (the last stage's gradients first).
// Where Megatron keeps G = P and puts the remainder m mod P in a short last
// group (and refuses 0 < m mod P < P), we split m into floor(m/P) groups of
// near-equal size (each between P and 2P - 1), the grouping Megatron allows
// with a tunable G; with m < P there is one group of m.
//
// Warm-up on rank r: 2(P - r - 1) + (v - 1)G forwards, capped at m*v. The
// first backward on rank r is of the rank's last stage, microbatch 0; the v-1
// earlier local stages must have run the first group (v-1)G forwards), and
// each rank below r+1 ... P-1 adds one forward for the trip down and one for
// the gradient's trip back (2(P - r - 1)). Then one forward, one backward
// (steady state), then the remaining backwards (cool-down).
//
// Unlike Megatron (which refuses 0 < m mod G < P) and PyTorch (which needs
// m divisible by max(1, m // P)), any m >= 1 is accepted. With m < P the one
// short group leaves dependency bubbles (each rank waits for microbatch 0 to
// come back round the loop), which the simulator shows; every order is
// checked deadlock-free by the property sweep (P <= 16, m <= 64, v <= 4). v = 1 is delegated to 1F1B (Megatron's
// interleaved formula would give a warm-up of 2(P - r - 1), doubling rank 0's activation peak).
#include <algorithm>

#include "schedules/generators/generators.h"

namespace pw {

namespace {

// Sizes of the microbatch groups: n = max(1, floor(m / P)) groups whose sizes
// differ by at most one, larger ones first, so every group has >= P
// microbatches when m >= P (Megatron's condition for no dependency stalls:
// a group shorter than P would make the rank wait for its own first stage's
// gradient) and m < P gives a single group of m.
std::vector<int> GroupSizes(int m, int P) {
  int n = std::max(1, m / P);
  std::vector<int> sizes(n, m / n);
  for (int g = 0; g < m % n; ++g) ++sizes[g];
  return sizes;
}

// (local stage, microbatch) pairs in Megatron's depth-first table order.
std::vector<std::pair<int, int>> ScheduleTable(const std::vector<int>& groups, int v, bool backward) {
  std::vector<std::pair<int, int>> table;
  int start = 0;
  for (int size : groups) {
    for (int k = 0; k < v; ++k) {
      int local = backward ? v - 1 - k : k;
      for (int mb = start; mb < start + size; ++mb) table.emplace_back(local, mb);
    }
    start += size;
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
  const std::vector<int> groups = GroupSizes(m, P);
  const int group = groups.front();
  const auto fwd = ScheduleTable(groups, v, false);
  const auto bwd = ScheduleTable(groups, v, true);
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
