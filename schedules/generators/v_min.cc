// V-Min (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory",
// arXiv 2405.15362, §3-§4; docs/ALGORITHMS.md §1 and §2 "V-Half / V-Min"): two
// stages per rank in V placement, backward split into I and W, about a third
// of 1F1B's activation memory. Built by BuildingBlockV (v_half.cc): one
// microbatch's block of offsets, repeated every 6 unit slots, W's in the
// free slots, then squeezed and reordered by FixedBlockV (v_half.cc).
//
// V-Min offsets for rank i (0-based), derived from the dependencies with
// unit costs: every pass of microbatch 0 runs as soon as its input exists, so
// each lifespan is as short as the V allows. F0 at i (down the V, one rank
// per slot); F1 at 2P - 1 - i (rank P - 1 turns the V right after its F0,
// then up one rank per slot); I1 at 2P + delta + i (rank 0 holds the last
// stage, whose I follows its F1; then down one rank per slot); I0 at
// 4P + delta - i - 1 (up again). delta = 2 when P % 3 == 0, else 0: without
// it I1 (2P + i) and F0 (i) share a slot modulo 6 when 6 divides 2P. These
// are the offsets of the paper's code (docs/ALGORITHMS.md §2).
//
// Memory with activation = wstash = 1 stage unit (I frees nothing):
// about ceil((P + 2) / 3) full-stage units (lifespans 4P + delta - 2i - 1 and
// 2i + 1 + delta sum to about 4P per microbatch, / 6 per interval, stage
// units; plus the W's wait for a free slot), measured with the simulator
// (tests/schedules/zb_test.cc). The bubble is larger than V-Half's (the
// paper's 2B/3 + O(n)); we do not squeeze warm-up and cool-down.
//
// Any m >= 1 is valid (the slot times form a feasible timed schedule).
// Memory limit: the order does not depend on it; GenerateSchedule refuses a
// request whose walk exceeds it (Infeasible naming --memory-limit).
#include <array>

#include "schedules/generators/generators.h"

namespace pw {

StatusOr<Program> GenerateVMin(const ScheduleRequest& req) {
  auto offsets = [](int P, int i) -> std::array<int, 4> {
    const int delta = P % 3 == 0 ? 2 : 0;
    return {i, 2 * P - i - 1, 2 * P + delta + i, 4 * P + delta - i - 1};
  };
  return FixedBlockV(req, offsets, "V-Min");
}

}  // namespace pw
