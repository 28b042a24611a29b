// V-Half (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory",
// arXiv 2405.15362, §3-§4; docs/ALGORITHMS.md §1 and §2 "V-Half / V-Min"): two
// stages per rank in V placement (rank r holds stages r and 2P - 1 - r),
// backward split into I and W, about half of 1F1B's activation memory.
// This file also holds the building-block engine that v_min.cc shares
// (BuildingBlockV).
//
// Building block (paper §3): one microbatch's passes on every rank, each at a
// fixed offset in unit slots (one slot = one stage pass, F = I = W):
// F of chunk 0, F of chunk 1, I of chunk 1, I of chunk 0. Microbatch k uses
// the block shifted by k * 6 slots (6 = the interval: 2 stages x 3 passes of
// one microbatch per rank), so a schedule is the block repeated. The paper's
// principle: peak activation per rank = ceil(lifespan / interval) x one
// microbatch's activations, lifespan = time from a forward to the end of the
// memory it keeps. Shorter lifespans (F's spread out, I's soon after) give
// lower memory and more bubble.
//
// V-Half offsets for rank i (0-based), derived from the dependencies with
// unit costs: the chunk-0 forwards go down the V one rank every 2 slots,
// F0 at 2i (so at most half the ranks hold a forward that is waiting); the
// chunk-1 forwards come back up one rank per slot from rank P - 1, which
// runs F1 right after its F0: F1 at 2(P - 1) + 1 + (P - 1 - i) = 3P - i - 2;
// the chunk-1 gradient starts on rank 0 at 3P - 1 (+ delta) and goes down
// one rank every 2 slots: I1 at 3P + delta + 2i - 1; the chunk-0 gradient
// comes back up one rank per slot from rank P - 1, which runs it 1 slot after
// its I1 ends: I0 at 5P + delta - 1 + (P - 1 - i) = 6P + delta - i - 2.
// delta = 3 when P is even, else 0, so that the four offsets fall into
// distinct slots modulo 6 on every rank (the repeated blocks never collide;
// checked below for the requested P). These are the offsets of the paper's
// code (docs/ALGORITHMS.md §2). The 2 slots per period left free on each rank take
// the W's, FIFO, each in the first free slot after its I; W's left after the
// last block close the rank's list.
//
// Memory with activation = wstash = 1 stage unit (I frees nothing, as in the
// paper's re-run): peak P/2 + 1 full-stage units (P + 2 stage activations)
// for even P, measured with the simulator (tests/schedules/zb_test.cc).
//
// Squeezing (FixedBlockV; v_slots.cc FixedBlockSlots): the plain repetition
// leaves warm-up and cool-down gaps. As the authors' zbv_greedy.py does, the
// passes are then moved, in slot order, into the earliest idle slot after
// their inputs wherever that does not raise the rank's peak -- first with
// the W's placed (outside the steady phase), then with W's left implicit
// (warm-up kept, cool-down moved) -- the result is executed with unit
// costs (squeeze) and the W's go into the idle slots, chunk 1's first. The
// order is then timed with the request's real costs. With unit costs this
// gives the authors' makespans (tests/schedules/v_reference_test.cc); the
// plain repetition stays a candidate when it is faster on the real costs
// and needs no more memory.
//
// Any m >= 1 is valid: the slot times form a feasible timed schedule (every
// pass starts after its inputs' slots end, one pass per slot per rank), so
// the time-sorted order cannot deadlock. Memory limit: the order does not
// depend on it; GenerateSchedule refuses a request whose walk exceeds it.
#include <algorithm>
#include <array>
#include <deque>
#include <string>
#include <vector>

#include "schedules/generators/generators.h"
#include "schedules/generators/v_slots.h"
#include "schedules/simulate.h"

namespace pw {

StatusOr<Program> BuildingBlockV(const ScheduleRequest& req, const BlockOffsetsFn& offsets, const std::string& name) {
  const int P = req.pp_size;
  const int m = req.num_microbatches;
  if (req.virtual_stages != 2)  // the registry already enforces this
    return Status::InvalidArgument(name + " needs exactly 2 stages per rank (--virtual-stages), got " +
                                   std::to_string(req.virtual_stages));
  constexpr int kInterval = 6;  // 2 stages x (F, I, W) of one microbatch per rank
  Program prog = MakeEmptyProgram(req, 2, Placement::kV);
  for (int r = 0; r < P; ++r) {
    // Offsets: [F chunk 0, F chunk 1, I chunk 1, I chunk 0].
    const std::array<int, 4> off = offsets(P, r);
    const std::array<int, 2> stage = {r, 2 * P - 1 - r};
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b)
        if (((off[a] - off[b]) % kInterval + kInterval) % kInterval == 0)
          return Status::Internal(name + ": building-block slots collide on rank " + std::to_string(r) + " for --pp " +
                                  std::to_string(P));
    // slot -> pass; W's go into the free slots.
    const int last = *std::max_element(off.begin(), off.end()) + kInterval * (m - 1);
    std::vector<int> kind(static_cast<size_t>(last) + 1, -1), mb_of(static_cast<size_t>(last) + 1, -1);
    for (int k = 0; k < m; ++k)
      for (int a = 0; a < 4; ++a) {
        kind[off[a] + kInterval * k] = a;
        mb_of[off[a] + kInterval * k] = k;
      }
    std::deque<Action> pending_w;  // W's whose I has ended, FIFO
    auto& list = prog.ranks[r];
    for (int t = 0; t <= last; ++t) {
      const int a = kind[t];
      if (a < 0) {
        if (!pending_w.empty()) {
          list.push_back(pending_w.front());
          pending_w.pop_front();
        }
        continue;
      }
      const int chunk = (a == 0 || a == 3) ? 0 : 1;
      const ActionType type = a < 2 ? ActionType::kF : ActionType::kI;
      list.push_back(MakeAction(stage[chunk], type, mb_of[t]));
      if (type == ActionType::kI) pending_w.push_back(MakeAction(stage[chunk], ActionType::kW, mb_of[t]));
    }
    list.insert(list.end(), pending_w.begin(), pending_w.end());
  }
  return prog;  // GenerateSchedule checks the memory limit
}

StatusOr<Program> FixedBlockV(const ScheduleRequest& req, const BlockOffsetsFn& offsets, const std::string& name) {
  PW_ASSIGN_OR_RETURN(Program plain, BuildingBlockV(req, offsets, name));  // checks v and the offsets
  const int P = req.pp_size;
  std::vector<std::array<int, 4>> block(P);
  for (int r = 0; r < P; ++r) block[r] = offsets(P, r);
  const Program squeezed = ProgramFromSlots(req, FixedBlockSlots(P, req.num_microbatches, block));
  StatusOr<SimResult> s_sim = Simulate(squeezed, req.costs);
  if (!s_sim.ok()) return Status::Internal(name + " reordered blocks do not simulate: " + s_sim.status().message());
  PW_ASSIGN_OR_RETURN(SimResult p_sim, Simulate(plain, req.costs));
  // The plain repetition only if it is faster and needs no more memory on any rank.
  const double tol = 1e-9 * std::max(1.0, s_sim->steady_step_s);
  bool plain_fits = p_sim.steady_step_s < s_sim->steady_step_s - tol;
  for (int r = 0; r < P && plain_fits; ++r)
    plain_fits = p_sim.per_rank[r].peak_memory_bytes - p_sim.per_rank[r].start_memory_bytes <=
                 s_sim->per_rank[r].peak_memory_bytes - s_sim->per_rank[r].start_memory_bytes;
  return plain_fits ? plain : squeezed;
}

std::array<int, 4> VHalfOffsets(int P, int i) {
  const int delta = P % 2 == 0 ? 3 : 0;
  return {2 * i, 3 * P - i - 2, 3 * P + delta + 2 * i - 1, 6 * P + delta - i - 2};
}

StatusOr<Program> GenerateVHalf(const ScheduleRequest& req) { return FixedBlockV(req, VHalfOffsets, "V-Half"); }

}  // namespace pw
