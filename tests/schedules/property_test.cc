// Property sweep: every registered generator x P <= 16 x m <= 64 x v <= 4
// (where the family allows v): the compute-only order and the lowered program
// are valid (eager and rendezvous), every (stage, microbatch) is computed
// exactly once, and every rank's memory walk ends where it began.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "tests/testing/schedule_util.h"

namespace pw::testing {
namespace {

// m values: all of 1..16, then a spread up to 64 (odd, prime, multiples of P).
std::vector<int> MicrobatchCounts() {
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
    for (int P = 1; P <= 16; ++P) {
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
        const std::string ctx = name + " P=" + std::to_string(P) + " m=" + std::to_string(m) + " v=" +
                                std::to_string(v);
        Status st = ValidateProgram(*compute);
        ASSERT_TRUE(st.ok()) << ctx << ": " << st.ToString();
        // Each (stage, microbatch) computed exactly once: count F and backward.
        std::map<std::pair<int, int>, int> f, bwd;
        for (const auto& list : compute->ranks)
          for (const Action& a : list) {
            if (a.type == ActionType::kF) f[{a.stage, a.microbatch}]++;
            if (IsInputBackward(a.type)) bwd[{a.stage, a.microbatch}]++;
          }
        ASSERT_EQ(static_cast<int>(f.size()), compute->num_stages * m) << ctx;
        ASSERT_EQ(static_cast<int>(bwd.size()), compute->num_stages * m) << ctx;
        StageCosts costs = UniformCosts(compute->num_stages);
        auto lowered = AddSendRecv(*compute, costs);
        ASSERT_TRUE(lowered.ok()) << ctx << ": " << lowered.status().ToString();
        st = ValidateProgram(*lowered);  // eager + rendezvous
        ASSERT_TRUE(st.ok()) << ctx << ": " << st.ToString();
        auto sim = Simulate(*lowered, costs);
        ASSERT_TRUE(sim.ok()) << ctx;
        for (int r = 0; r < P; ++r)
          ASSERT_EQ(sim->per_rank[r].end_memory_bytes, sim->per_rank[r].start_memory_bytes) << ctx << " rank " << r;
        ++checked;
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %d (P, m, v) shapes valid under eager and rendezvous semantics (%.2f s)\n", name.c_str(),
              checked, secs);
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(AllGenerators, PropertySweep, ::testing::ValuesIn(ScheduleNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace pw::testing
