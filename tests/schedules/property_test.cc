// Property sweep: every registered generator x P <= 16 x m <= 64 x v <= 4
// (where the family allows v): the compute-only order and the lowered program
// are valid (eager and rendezvous), every (stage, microbatch) is computed
// exactly once, and every rank's memory walk ends where it began. Under
// AddressSanitizer (tests/sanitized.h) a sub-grid: P <= 8 and 12 values of m.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "schedules/validate.h"
#include "tests/sanitized.h"
#include "tests/testing/schedule_util.h"

namespace pw::testing {
namespace {

// m values: all of 1..16, then a spread up to 64 (odd, prime, multiples of P).
// Sanitized: 1..5, 7, 8, 12, 16, 17, 31, 32 (below, at and above P and 2P).
std::vector<int> MicrobatchCounts() {
  if (kSanitized) return {1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 31, 32};
  std::vector<int> ms;
  for (int m = 1; m <= 16; ++m) ms.push_back(m);
  for (int m : {17, 19, 23, 24, 29, 31, 32, 33, 40, 47, 48, 53, 63, 64}) ms.push_back(m);
  return ms;
}

class PropertySweep : public ::testing::TestWithParam<std::string> {};

TEST_P(PropertySweep, EveryShapeIsValidAndComplete) {
  const std::string name = GetParam();
  auto info = FindSchedule(name);
  ASSERT_TRUE(info.ok());
  int checked = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int v = info->min_virtual_stages; v <= (info->max_virtual_stages ? info->max_virtual_stages : 4); ++v) {
    for (int P = 1; P <= (kSanitized ? 8 : 16); ++P) {
      for (int m : MicrobatchCounts()) {
        ScheduleRequest req;
        req.schedule = name;
        req.pp_size = P;
        req.num_microbatches = m;
        req.virtual_stages = v;
        auto compute = GenerateSchedule(req);
        if (!compute.ok()) {
          // A refusal is allowed only as a clear, user-facing error.
          EXPECT_NE(compute.status().code(), StatusCode::kInternal)
              << name << " P=" << P << " m=" << m << " v=" << v << ": " << compute.status().ToString();
          EXPECT_NE(compute.status().message().find("--"), std::string::npos)
              << "refusal must name an option: " << compute.status().ToString();
          continue;
        }
        const std::string ctx =
            name + " P=" + std::to_string(P) + " m=" + std::to_string(m) + " v=" + std::to_string(v);
        // Each (stage, microbatch) computed exactly once: count F and backward.
        std::map<std::pair<int, int>, int> f, bwd;
        for (const auto& list : compute->ranks)
          for (const Action& whole : list) {
            const std::vector<Action> parts = IsOverlap(whole.type)  // both halves of a pair
                                                  ? std::vector<Action>{ForwardHalf(whole), BackwardHalf(whole)}
                                                  : std::vector<Action>{whole};
            for (const Action& a : parts) {
              if (a.type == ActionType::kF) f[{a.stage, a.microbatch}]++;
              if (IsInputBackward(a.type)) bwd[{a.stage, a.microbatch}]++;
            }
          }
        ASSERT_EQ(static_cast<int>(f.size()), compute->num_stages * m) << ctx;
        ASSERT_EQ(static_cast<int>(bwd.size()), compute->num_stages * m) << ctx;
        // Validate the order, lower, validate (eager + rendezvous), simulate.
        StageCosts costs = UniformCosts(compute->num_stages);
        PipelineFailure failure;
        auto run = SimulateOrder(*compute, costs, &failure);
        ASSERT_TRUE(run.ok()) << ctx << ": " << PipelineStepName(failure.step) << ": " << run.status().ToString();
        const SimResult* sim = &run->sim;
        for (int r = 0; r < P; ++r)
          ASSERT_EQ(sim->per_rank[r].end_memory_bytes, sim->per_rank[r].start_memory_bytes) << ctx << " rank " << r;
        ++checked;
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %d (P, m, v) shapes valid under eager and rendezvous semantics (%.2f s)\n", name.c_str(), checked,
              secs);
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, PropertySweep, ::testing::ValuesIn(ScheduleNames()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
});

// The memory limit holds for every family (GenerateSchedule checks it once,
// after the generator): with --memory-limit L a request either comes back
// Infeasible, naming --memory-limit, or as an order whose activation peak
// (PLAN_FORMAT rule 7 walk minus the static bytes) is within L on every rank.
class MemoryLimitSweep : public ::testing::TestWithParam<std::string> {};

TEST_P(MemoryLimitSweep, RefusedOrWithinTheLimit) {
  const std::string name = GetParam();
  auto info = FindSchedule(name);
  ASSERT_TRUE(info.ok());
  int refused = 0, fitted = 0;
  for (int v = info->min_virtual_stages; v <= (info->max_virtual_stages ? info->max_virtual_stages : 3); ++v)
    for (int P = 1; P <= 6; ++P)
      for (int m : {1, 3, 8}) {
        StageMemory mem;
        mem.static_bytes = 100;
        mem.activation = 4;
        mem.wstash = 3;
        ScheduleRequest req;
        req.schedule = name;
        req.pp_size = P;
        req.num_microbatches = m;
        req.virtual_stages = v;
        req.costs = UniformCosts(P * v, StageCost{}, mem);
        auto free = GenerateSchedule(req);
        ASSERT_TRUE(free.ok()) << free.status().ToString();
        auto free_sim = Simulate(*free, req.costs);
        ASSERT_TRUE(free_sim.ok());
        int64_t unlimited = 0;
        for (const RankResult& rr : free_sim->per_rank)
          unlimited = std::max(unlimited, rr.peak_memory_bytes - rr.start_memory_bytes);
        // One microbatch in flight: the least any order needs.
        auto one = OneMicrobatchOrder(req);
        ASSERT_TRUE(one.ok()) << one.status().ToString();
        ASSERT_TRUE(ValidateProgram(*one).ok()) << name;
        auto one_sim = Simulate(*one, req.costs);
        ASSERT_TRUE(one_sim.ok());
        int64_t minimum = 0;
        for (const RankResult& rr : one_sim->per_rank)
          minimum = std::max(minimum, rr.peak_memory_bytes - rr.start_memory_bytes);
        EXPECT_LE(minimum, unlimited) << name;
        for (int64_t limit = 1; limit <= unlimited; limit += std::max<int64_t>(1, unlimited / 5)) {
          const std::string ctx = name + " v=" + std::to_string(v) + " P=" + std::to_string(P) +
                                  " m=" + std::to_string(m) + " limit=" + std::to_string(limit);
          req.memory_limit = static_cast<double>(limit);
          auto p = GenerateSchedule(req);
          // A fixed order is refused below its own peak; an adaptive family
          // runs whenever one microbatch in flight fits.
          if (info->memory_adaptive && limit >= minimum) {
            EXPECT_TRUE(p.ok()) << ctx << ": " << p.status().ToString();
          }
          if (!info->memory_adaptive && limit < unlimited) {
            EXPECT_FALSE(p.ok()) << ctx;
          }
          if (!p.ok()) {
            EXPECT_EQ(p.status().code(), StatusCode::kInfeasible) << ctx << ": " << p.status().ToString();
            EXPECT_NE(p.status().message().find("--memory-limit"), std::string::npos)
                << ctx << ": " << p.status().ToString();
            ++refused;
            continue;
          }
          auto sim = Simulate(*p, req.costs);
          ASSERT_TRUE(sim.ok()) << ctx;
          for (int r = 0; r < P; ++r)
            EXPECT_LE(sim->per_rank[r].peak_memory_bytes - sim->per_rank[r].start_memory_bytes, limit)
                << ctx << " rank " << r;
          ++fitted;
        }
        req.memory_limit.reset();
      }
  std::printf("%s: %d limited requests refused, %d fitted\n", name.c_str(), refused, fitted);
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, MemoryLimitSweep, ::testing::ValuesIn(ScheduleNames()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
});

TEST(MemoryLimit, RefusalNamesOptionRankPeakAndLimit) {
  // 1F1B, P = 4, m = 8, unit costs: rank 0 holds 4 activations.
  ScheduleRequest req;
  req.schedule = "1f1b";
  req.pp_size = 4;
  req.num_microbatches = 8;
  req.memory_limit = 2;
  auto p = GenerateSchedule(req);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInfeasible);
  const std::string& msg = p.status().message();
  for (const char* part : {"1F1B", "--memory-limit 2", "rank 0", "4 bytes"})
    EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
  req.memory_limit = 4;
  EXPECT_TRUE(GenerateSchedule(req).ok());
}

TEST(MemoryLimit, PerRankLimits) {
  // 1F1B, P = 4, m = 8, unit costs: rank r holds 4 - r activations.
  ScheduleRequest req;
  req.schedule = "1f1b";
  req.pp_size = 4;
  req.num_microbatches = 8;
  req.rank_memory_limits = {4, 3, 2, 1};
  EXPECT_TRUE(GenerateSchedule(req).ok());
  req.rank_memory_limits = {4, 3, 1, 1};
  auto p = GenerateSchedule(req);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInfeasible);
  for (const char* part : {"2 bytes of activation memory on rank 2", "the 1 bytes that --memory-limit leaves rank 2"})
    EXPECT_NE(p.status().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << p.status().message();
  req.rank_memory_limits = {4, 3};
  EXPECT_EQ(GenerateSchedule(req).status().code(), StatusCode::kInvalidArgument);
  // The adaptive families fit each rank's own limit: rank 0 one microbatch,
  // the others P.
  for (const char* name : {"zb-auto", "zb-v"}) {
    req.schedule = name;
    req.virtual_stages = 0;
    const int v = std::string(name) == "zb-v" ? 2 : 1;
    req.rank_memory_limits = {2.0 * v, 4.0 * v, 4.0 * v, 4.0 * v};
    auto pl = GenerateSchedule(req);
    ASSERT_TRUE(pl.ok()) << name << ": " << pl.status().ToString();
    auto sim = Simulate(*pl, UniformCosts(4 * v));
    ASSERT_TRUE(sim.ok());
    for (int r = 0; r < 4; ++r)
      EXPECT_LE(static_cast<double>(sim->per_rank[r].peak_memory_bytes), req.rank_memory_limits[r])
          << name << " rank " << r;
    req.rank_memory_limits[2] = v - 1;  // less than one microbatch on rank 2
    auto none = GenerateSchedule(req);
    ASSERT_FALSE(none.ok()) << name;
    EXPECT_EQ(none.status().code(), StatusCode::kInfeasible);
    EXPECT_NE(none.status().message().find("rank 2"), std::string::npos) << none.status().message();
  }
}

}  // namespace
}  // namespace pw::testing
