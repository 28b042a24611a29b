// DualPipeV's overlapped pairs in the planner's numbers (issue #25): an
// OVERLAP_F_B is its F half, then its B half, each a step of the memory walk
// (docs/PLAN_FORMAT.md rule 7), as the executor runs it. The simulator
// counted the pair as one step, so plans predicted peaks below what the
// executor holds between the halves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "models/spec/device.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/memory_profile.h"
#include "planner/planner.h"

namespace pw {
namespace {

// Rule 7 walked over a plan's own lists and stage bytes, apart from the
// simulator: a pair's halves are two steps.
int64_t WalkedPeak(const Plan& plan, int rank) {
  int64_t mem = 0;
  for (const PlanStage& s : plan.stages)
    if (s.rank == rank) mem += s.memory.static_bytes;
  int64_t peak = mem;
  auto step = [&](int64_t d) {
    mem += d;
    peak = std::max(peak, mem);
  };
  for (const Action& a : plan.ranks[rank]) {
    const StageMemory& m = plan.stages[a.stage].memory;
    switch (a.type) {
      case ActionType::kF:
        step(m.activation);
        break;
      case ActionType::kB:
        step(-m.activation);
        break;
      case ActionType::kI:
        step(m.wstash - m.activation);
        break;
      case ActionType::kW:
        step(-m.wstash);
        break;
      case ActionType::kOverlapFB:
        step(m.activation);
        step(-plan.stages[a.b_stage].memory.activation);
        break;
      default:
        break;
    }
  }
  return peak;
}

// GPT-2 on four A100-40GB ranks, DualPipeV, 8 microbatches of one sequence
// (bf16, no recompute): rank 0 peaks at 2,463,852,032 bytes after the F half
// of a pair; the one-step count predicted 2,373,404,160.
TEST(DualPipeVMemory, PlanPredictsThePeakAfterThePairsForwardHalf) {
  PlannerModel m;
  m.config = *LoadModelConfig("gpt2");
  m.device = *LoadDeviceSpec("A100-40GB");
  PlannerOptions o;
  o.pp_size = 4;
  o.num_microbatches = 8;
  o.micro_batch_size = 1;
  o.schedules = {"dualpipev"};
  o.recompute = Recompute::kNone;
  o.find_min_pp = false;
  auto r = SearchPlans(m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto plan = BuildPlan(*r, m, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->schedule, "dualpipev");
  EXPECT_EQ(plan->predicted.per_rank[0].peak_memory_bytes, 2463852032);
  int64_t worst = 0;
  for (int rank = 0; rank < plan->pp_size; ++rank) {
    const int64_t walked = WalkedPeak(*plan, rank), predicted = plan->predicted.per_rank[rank].peak_memory_bytes;
    worst = std::max<int64_t>(worst, std::llabs(walked - predicted));
    EXPECT_EQ(predicted, walked) << "rank " << rank;
  }
  // The planner's own count (MemoryProfile, used to fit splits under the
  // limit) walks the same steps: its dynamic peak plus static is the plan's.
  MemoryProfile profile(PlanProgram(*plan));
  const StageCosts costs = PlanCosts(*plan);
  for (int rank = 0; rank < plan->pp_size; ++rank) {
    int64_t static_bytes = 0;
    for (const PlanStage& s : plan->stages)
      if (s.rank == rank) static_bytes += s.memory.static_bytes;
    EXPECT_EQ(static_bytes + profile.RankDynamicPeak(rank, costs.memory),
              plan->predicted.per_rank[rank].peak_memory_bytes)
        << "rank " << rank;
  }
  std::printf("dualpipev gpt2 P=4 m=8: rank 0 peak %lld bytes; worst |predicted - walked| over ranks = %lld\n",
              static_cast<long long>(plan->predicted.per_rank[0].peak_memory_bytes), static_cast<long long>(worst));
}

}  // namespace
}  // namespace pw
