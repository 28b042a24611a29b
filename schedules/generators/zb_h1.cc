// ZB-H1, the first handcrafted zero-bubble schedule (Qi et al. 2024, "Zero
// Bubble Pipeline Parallelism", §2.3, Figure 3 top, Table 2). One stage per
// rank, loop placement; the backward is split into I (input gradient, the
// paper's "B") and W (weight gradient).
//
// It keeps 1F1B's warm-up and in-flight limit and only moves W passes: a W has
// no consumer, so it can wait until the rank would otherwise idle.
//
// Warm-up on rank r: w = min(P - r - 1, m) forwards, exactly as 1F1B (with
// unit costs the gradient of microbatch 0 returns to rank r after the
// forward has gone down P - r - 1 more ranks and come back, time for P - r - 1
// more forwards).
// Steady state, k = 0, 1, ...: F(w + k), I(k), and W(k - r) once k >= r.
// Rank r therefore holds back r weight passes. Why r: in the steady state
// forwards reach the last rank one per F+I+W of rank 0, but at the start rank
// 0's warm-up sends P of them back to back; rank r runs its first r + 1
// I's back to back (no W in between) and only then needs W to fill the gaps
// left by the slower stream. The deferred W's are done in the cool-down.
// Cool-down: the remaining I's, each followed by the next deferred W, then
// the rest of the W's.
//
// Memory (activation = wstash = 1 unit): before rank r's first W it has run
// w + 1 + r = P forwards, so the walk peaks at P - r activations + r wstash
// = P (Table 2: (p - i + 1) M_B + (i - 1) M_W with i = r + 1), and after
// that every F is preceded by a W. Bubble with unit costs: each rank idles
// only P - 1 - r units waiting for its first I (rank 0 the longest, P - 1),
// so the makespan is 3m + P - 1 for m >= P, against 1F1B's 3(m + P - 1); in
// general (P - 1)(T_F + T_I - T_W) (Table 2).
// Any m >= 1 is valid: the warm-up is capped at m (the paper's code asks for
// m >= 2P only for its own simulator). Warm-up counts do not increase with r,
// so every rank meets its inputs in order and the order cannot deadlock.
#include <algorithm>

#include "schedules/generators/generators.h"

namespace pw {

StatusOr<Program> GenerateZBH1(const ScheduleRequest& req) {
  const int P = req.pp_size, m = req.num_microbatches;
  Program p = MakeEmptyProgram(req, 1, Placement::kLoop);
  for (int r = 0; r < P; ++r) {
    auto& list = p.ranks[r];
    const int warmup = std::min(P - r - 1, m);
    const int lag = r;  // W passes held back on rank r
    int next_w = 0;
    auto add_w = [&](int upto) {  // W's for microbatches < upto, at most one
      if (next_w < upto) list.push_back(MakeAction(r, ActionType::kW, next_w++));
    };
    for (int mb = 0; mb < warmup; ++mb) list.push_back(MakeAction(r, ActionType::kF, mb));
    for (int k = 0; k < m; ++k) {
      if (warmup + k < m) list.push_back(MakeAction(r, ActionType::kF, warmup + k));
      list.push_back(MakeAction(r, ActionType::kI, k));
      // Steady state: W(k - lag). Cool-down (no forwards left): one deferred
      // W after every I.
      add_w(warmup + k < m ? k - lag + 1 : k + 1);
    }
    while (next_w < m) list.push_back(MakeAction(r, ActionType::kW, next_w++));
  }
  return p;  // GenerateSchedule checks the memory limit
}

}  // namespace pw
