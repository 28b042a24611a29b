// DualPipeV (DeepSeek's DualPipe "cut in half", deepseek-ai/DualPipe,
// dualpipe/dualpipev.py; PyTorch's ScheduleDualPipeV): V placement with two
// stages per rank (rank r holds chunk 0 = stage r and chunk 1 = stage
// 2P - 1 - r), split backward in the warm-up and the cool-down, and in the
// steady state the forward of one chunk overlapped with the full backward of
// the other as one OVERLAP_F_B pair (its cost "F&B" is StageCost::overlap_fb).
//
// Each chunk runs its forwards, and its backwards, in microbatch order. Rank
// r (0-based) emits, in the eight steps of the authors' construction (our
// wording; every count is the rank's, and "I" queues its W in a FIFO that a
// later "W" pops):
//   1. 2(P - 1 - r) forwards of chunk 0 (fill the down-going half of the V);
//   2. r + 1 pairs (F0, F1): the first chunk-1 inputs come back up the V;
//   3. P - 1 - r triples (I1, W, F1): the first gradients arrive; zero-bubble
//      split so the rank's memory stays bounded;
//   4. m - 2P + r + 1 rounds of two pairs (F0;B1) and (F1;B0) - the steady
//      state; on the last rank (the turn of the V) the first round's first pair
//      runs unpaired, F0 then B1, as the authors do to shorten the bubble;
//   5. P - 1 - r rounds B1, (F1;B0): chunk 0 has no forwards left;
//   6. r + 1 rounds B1, B0, switching to split backward (I, queued W) half
//      way (before B1 on odd ranks, after it on even ranks), so that exactly
//      r + 1 W's are queued for the cool-down;
//   7. P - 1 - r rounds W, I0;
//   8. r + 1 W's (the queue empties).
// Counting gives m forwards and m backwards per chunk iff m - 2P + r + 1 >= 0
// on every rank, i.e. m >= 2P - 1; the authors require m >= 2P (their
// assert num_chunks >= num_ranks * 2). For m < 2P we build the order for
// n = 2P microbatches and drop every pass of a microbatch >= m (a pair that
// loses one half becomes its other half, a plain F or B), as ZB-V and
// PyTorch's ZB-V do: a dropped pass has no dependent among the kept ones and
// only ever runs after earlier passes of its rank, so removing it delays
// nothing and the order stays deadlock-free; the property sweep
// (tests/schedules/property_test.cc, every m in 1..16 and P <= 16) checks
// it under eager and rendezvous semantics. Small m simply has more bubble.
//
// Bubble (DualPipe README, "DualPipeV"): (P - 1)(F&B + B - 3W) per step for
// equal stages, where B is the full backward; tests/schedules/dualpipev_test.cc
// checks the simulator against it.
#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "schedules/generators/generators.h"

namespace pw {

StatusOr<Program> GenerateDualPipeV(const ScheduleRequest& req) {
  const int P = req.pp_size;
  const int m = req.num_microbatches;
  if (req.virtual_stages != 2)  // the registry already enforces this
    return Status::InvalidArgument("DualPipeV needs exactly 2 stages per rank (--virtual-stages), got " +
                                   std::to_string(req.virtual_stages));
  const int n = std::max(m, 2 * P);  // microbatches built; those >= m are dropped
  Program prog = MakeEmptyProgram(req, 2, Placement::kV);
  for (int r = 0; r < P; ++r) {
    const int stage[2] = {r, 2 * P - 1 - r};
    int next_f[2] = {0, 0}, next_b[2] = {0, 0};
    std::deque<std::pair<int, int>> w_queue;  // (stage, microbatch) of I's whose W is pending
    auto& list = prog.ranks[r];
    auto f = [&](int c) {
      const int mb = next_f[c]++;
      if (mb < m) list.push_back(MakeAction(stage[c], ActionType::kF, mb));
    };
    auto b = [&](int c, bool split) {
      const int mb = next_b[c]++;
      if (mb >= m) {
        if (split) w_queue.emplace_back(-1, -1);  // keeps the W count: its W is dropped too
        return;
      }
      if (!split) {
        list.push_back(MakeAction(stage[c], ActionType::kB, mb));
        return;
      }
      list.push_back(MakeAction(stage[c], ActionType::kI, mb));
      w_queue.emplace_back(stage[c], mb);
    };
    auto w = [&]() {
      if (w_queue.front().first >= 0)
        list.push_back(MakeAction(w_queue.front().first, ActionType::kW, w_queue.front().second));
      w_queue.pop_front();
    };
    auto pair = [&](int fc, int bc) {
      if (next_f[fc] < m && next_b[bc] < m) {
        list.push_back(MakeOverlap(stage[fc], next_f[fc]++, stage[bc], next_b[bc]++));
        return;
      }
      f(fc);  // one half (or both) dropped: the rest runs unpaired
      b(bc, false);
    };
    const bool last_rank = r == P - 1;
    for (int k = 0; k < 2 * (P - 1 - r); ++k) f(0);  // 1
    for (int k = 0; k < r + 1; ++k) {                // 2
      f(0);
      f(1);
    }
    for (int k = 0; k < P - 1 - r; ++k) {  // 3
      b(1, true);
      w();
      f(1);
    }
    const int steady = n - 2 * P + r + 1;
    for (int k = 0; k < steady; ++k) {  // 4
      if (k == 0 && last_rank) {
        f(0);
        b(1, false);
      } else {
        pair(0, 1);
      }
      pair(1, 0);
    }
    for (int k = 0; k < P - 1 - r; ++k) {  // 5
      b(1, false);
      pair(1, 0);
    }
    bool split = false;
    for (int k = 0; k < r + 1; ++k) {  // 6
      if (k == (r + 1) / 2 && r % 2 == 1) split = true;
      b(1, split);
      if (k == (r + 1) / 2 && r % 2 == 0) split = true;
      b(0, split);
    }
    for (int k = 0; k < P - 1 - r; ++k) {  // 7
      w();
      b(0, true);
    }
    for (int k = 0; k < r + 1; ++k) w();  // 8
    if (!w_queue.empty() || next_f[0] != n || next_f[1] != n || next_b[0] != n || next_b[1] != n)
      return Status::Internal("DualPipeV rank " + std::to_string(r) + " placed " + std::to_string(next_f[0]) + "/" +
                              std::to_string(next_f[1]) + " forwards and " + std::to_string(next_b[0]) + "/" +
                              std::to_string(next_b[1]) + " backwards of n = " + std::to_string(n));
  }
  return prog;
}

}  // namespace pw
