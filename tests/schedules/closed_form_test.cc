// Closed forms with unit costs (F = I = W = 1, B = 2, comm 0), many (P, m).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/testing/schedule_util.h"

namespace pw::testing {
namespace {

TEST(ClosedForm, GPipeAnd1F1BMakespan) {
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int P = 1; P <= 8; ++P) {
      for (int m = 1; m <= 24; ++m) {
        auto pl = RunPipeline(name, P, m);
        ASSERT_TRUE(pl.ok()) << name << " P=" << P << " m=" << m << ": " << pl.status().ToString();
        EXPECT_DOUBLE_EQ(pl->sim.makespan_s, 3.0 * (m + P - 1)) << name << " P=" << P << " m=" << m;
        EXPECT_NEAR(pl->sim.bubble_ratio, double(P - 1) / (m + P - 1), 1e-12) << name << " P=" << P << " m=" << m;
        for (int r = 0; r < P; ++r) {
          int64_t want = std::string(name) == "gpipe" ? m : std::min(P - r, m);
          EXPECT_EQ(pl->sim.per_rank[r].peak_memory_bytes, want) << name << " P=" << P << " m=" << m << " rank " << r;
        }
      }
    }
  }
}

TEST(ClosedForm, InterleavedMakespanWhenMAtLeastP) {
  double worst = 0;
  for (int v = 2; v <= 4; ++v)
    for (int P = 2; P <= 8; ++P)
      for (int m = P; m <= 4 * P; ++m) {
        auto pl = RunPipeline("interleaved-1f1b", P, m, v, CostsPerRankUnit(P * v, v));
        ASSERT_TRUE(pl.ok()) << "P=" << P << " m=" << m << " v=" << v << ": " << pl.status().ToString();
        double want = 3.0 * m + 3.0 * (P - 1) / v;
        worst = std::max(worst, std::abs(pl->sim.makespan_s - want));
        EXPECT_NEAR(pl->sim.makespan_s, want, 1e-9) << "P=" << P << " m=" << m << " v=" << v;
      }
  std::printf("interleaved closed form: worst |makespan - (3m + 3(P-1)/v)| = %.3g\n", worst);
}

TEST(ClosedForm, InterleavedWithOneStagePerRankIs1F1B) {
  auto a = RunPipeline("interleaved-1f1b", 4, 8, 1);
  auto b = RunPipeline("1f1b", 4, 8, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->compute.ranks.size(), b->compute.ranks.size());
  for (int r = 0; r < 4; ++r) EXPECT_EQ(a->compute.ranks[r], b->compute.ranks[r]) << "rank " << r;
  EXPECT_EQ(a->sim.per_rank[0].peak_memory_bytes, 4);
}

TEST(ClosedForm, FewerMicrobatchesThanStages) {
  for (const char* name : {"1f1b", "interleaved-1f1b"})
    for (int m = 1; m <= 3; ++m) {
      auto pl = RunPipeline(name, 4, m);
      ASSERT_TRUE(pl.ok()) << name << " m=" << m << ": " << pl.status().ToString();
      if (std::string(name) == "1f1b") {
        EXPECT_DOUBLE_EQ(pl->sim.makespan_s, 3.0 * (m + 3));
      }
    }
  auto p8 = RunPipeline("1f1b", 8, 1);
  ASSERT_TRUE(p8.ok());
  EXPECT_DOUBLE_EQ(p8->sim.makespan_s, 24.0);
}

// Interleaved ZB, hand-derived for P = 2, v = 2, stage costs F = I = W =
// 1/2 (a rank's work per microbatch 3): a rank's work is 3m, and rank 1 can
// start no earlier than microbatch 0's first forward on rank 0 ends (1/2), so
// 3m + 1/2 is a lower bound on the makespan; the W's that Interleaved 1F1B
// runs inside its B's fill its bubbles, so interleaved-zb meets the bound,
// where Interleaved 1F1B takes 3m + 3/2, in no more activation memory.
TEST(ClosedForm, InterleavedZeroBubbleMeetsTheLowerBoundAtP2) {
  for (int m : {2, 4, 8, 16}) {
    auto zb = RunPipeline("interleaved-zb", 2, m, 2, CostsPerRankUnit(4, 2));
    auto il = RunPipeline("interleaved-1f1b", 2, m, 2, CostsPerRankUnit(4, 2));
    ASSERT_TRUE(zb.ok() && il.ok()) << zb.status().ToString() << il.status().ToString();
    EXPECT_DOUBLE_EQ(zb->sim.makespan_s, 3.0 * m + 0.5) << "m=" << m;
    EXPECT_DOUBLE_EQ(il->sim.makespan_s, 3.0 * m + 1.5) << "m=" << m;
    int64_t zb_peak = 0, il_peak = 0;
    for (int r = 0; r < 2; ++r) {
      zb_peak = std::max(zb_peak, zb->sim.per_rank[r].peak_memory_bytes);
      il_peak = std::max(il_peak, il->sim.per_rank[r].peak_memory_bytes);
    }
    EXPECT_LE(zb_peak, il_peak) << "m=" << m << ": no more memory than Interleaved 1F1B";
  }
  // With 4 ranks its bubble is well below Interleaved 1F1B's too.
  for (int m : {8, 16}) {
    auto zb = RunPipeline("interleaved-zb", 4, m, 2, CostsPerRankUnit(8, 2));
    auto il = RunPipeline("interleaved-1f1b", 4, m, 2, CostsPerRankUnit(8, 2));
    ASSERT_TRUE(zb.ok() && il.ok());
    EXPECT_LT(zb->sim.bubble_ratio, 0.5 * il->sim.bubble_ratio) << "m=" << m;
  }
}

// The V families with one microbatch, hand-derived: V placement puts stages
// 0 and 2P-1 on rank 0, so the microbatch's forwards cross all 2P stages
// (2P units), its input-gradient halves come back through all of them (2P
// units), and only then can rank 0 run stage 0's W (1 unit): makespan 4P + 1
// with unit costs (F = I = W = 1, no messages), and no order does better.
// ZB-V, V-Min and V-auto run every other W inside that chain's idle time and
// meet it. V-Half does not: its building block runs the last rank's W of
// stage P right after that stage's I, before the I of stage P - 1 on the same
// rank, so that W sits on the chain: 4P + 2 (one unit above the bound; its
// memory would allow the W later, as V-auto shows at the same peak).
TEST(ClosedForm, VFamiliesWithOneMicrobatch) {
  for (const char* name : {"zb-v", "v-half", "v-min", "v-auto"}) {
    const bool v_half = std::string(name) == "v-half";
    for (int P = 2; P <= 6; ++P) {
      auto pl = RunPipeline(name, P, 1, 2);
      ASSERT_TRUE(pl.ok()) << name << " P=" << P << ": " << pl.status().ToString();
      EXPECT_DOUBLE_EQ(pl->sim.makespan_s, 4.0 * P + (v_half ? 2 : 1)) << name << " P=" << P;
      if (v_half) {
        auto v_auto = RunPipeline("v-auto", P, 1, 2);
        ASSERT_TRUE(v_auto.ok());
        for (int r = 0; r < P; ++r)
          EXPECT_LE(v_auto->sim.per_rank[r].peak_memory_bytes, pl->sim.per_rank[r].peak_memory_bytes)
              << "P=" << P << " rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace pw::testing
