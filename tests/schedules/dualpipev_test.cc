// DualPipeV (schedules/generators/dualpipev.cc) and the OVERLAP_F_B action:
// PyTorch's string form round trip, the bubble against the DualPipe README's
// closed form (P - 1)(F&B + B - 3W), a hand-derived small case, and the pair's
// lowering (both halves' messages).
#include <gtest/gtest.h>

#include <cmath>

#include "schedules/lower.h"
#include "schedules/validate.h"
#include "tests/testing/schedule_util.h"

namespace pw::testing {
namespace {

TEST(OverlapAction, RoundTripsPyTorchString) {
  auto a = ParseAction(" (0F7;7B3)OVERLAP_F_B ");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->type, ActionType::kOverlapFB);
  EXPECT_EQ(ForwardHalf(*a), MakeAction(0, ActionType::kF, 7));
  EXPECT_EQ(BackwardHalf(*a), MakeAction(7, ActionType::kB, 3));
  EXPECT_EQ(a->ToString(), "(0F7;7B3)OVERLAP_F_B");
  EXPECT_EQ(*a, MakeOverlap(0, 7, 7, 3));
  EXPECT_NE(*a, MakeOverlap(0, 7, 7, 4));
  // Blanks around each half are ignored, as around any action
  // (docs/PLAN_FORMAT.md, the action grammar).
  auto spaced = ParseAction("( 0F7 ;\t7B3 )OVERLAP_F_B");
  ASSERT_TRUE(spaced.ok()) << spaced.status().ToString();
  EXPECT_EQ(*spaced, *a);
  EXPECT_TRUE(IsCompute(a->type));
  EXPECT_FALSE(IsComm(a->type));
  for (const char* s : {"(0F7;7I3)OVERLAP_F_B", "(7B3;0F7)OVERLAP_F_B", "(0F7)OVERLAP_F_B", "0OVERLAP_F_B1",
                        "(0F7;7B3)", "(0F7;7B3)OVERLAP_F_Bx", "(0F7;7B)OVERLAP_F_B", "(0F7;;7B3)OVERLAP_F_B"}) {
    auto bad = ParseAction(s);
    EXPECT_FALSE(bad.ok()) << "'" << s << "' parsed as " << (bad.ok() ? bad->ToString() : "");
    if (!bad.ok()) {
      EXPECT_NE(bad.status().message().find("OVERLAP_F_B"), std::string::npos) << s;
    }
  }
}

// Idle time of the rank with the most, between t = 0 and the makespan.
double MaxIdle(const SimResult& sim) {
  double idle = 0;
  for (const RankResult& rr : sim.per_rank) idle = std::max(idle, sim.makespan_s - rr.busy_s);
  return idle;
}

// With F = I = W = 1 per stage (B = I + W = 2) and F&B = x, the README's
// DualPipeV bubble is (P - 1)(x + B - 3W) = (P - 1)(x - 1).
TEST(DualPipeV, BubbleMatchesReadmeClosedForm) {
  double worst = 0;
  int shapes = 0;
  for (double fb : {3.0, 2.5, 2.0}) {  // no overlap gain (F + B), then partial gains
    for (int P = 2; P <= 8; ++P)
      for (int m : {2 * P, 2 * P + 1, 3 * P, 4 * P + 3}) {
        StageCost c;
        c.overlap_fb = fb == 3.0 ? -1.0 : fb;  // -1: the default F + B
        auto pl = RunPipeline("dualpipev", P, m, 2, UniformCosts(2 * P, c));
        ASSERT_TRUE(pl.ok()) << "P=" << P << " m=" << m << ": " << pl.status().ToString();
        const double closed = (P - 1) * (fb + 2.0 - 3.0);
        const double got = MaxIdle(pl->sim);
        worst = std::max(worst, std::fabs(got - closed));
        EXPECT_NEAR(got, closed, 1e-9) << "P=" << P << " m=" << m << " F&B=" << fb;
        ++shapes;
        if (fb == 3.0 && m == 4 * P + 3) {  // peak activations (stage units, M_W = M_B): reported, not asserted
          int64_t peak = 0;
          for (const RankResult& rr : pl->sim.per_rank)
            peak = std::max(peak, rr.peak_memory_bytes - rr.start_memory_bytes);
          std::printf(
              "dualpipev P=%d m=%d: makespan %.0f, max idle %.0f (closed form %.0f), peak %lld stage activations\n", P,
              m, pl->sim.makespan_s, got, closed, static_cast<long long>(peak));
        }
      }
  }
  std::printf("dualpipev: %d shapes (P 2..8, m >= 2P, F&B in {3, 2.5, 2}), worst |bubble - (P-1)(F&B+B-3W)| = %.3g\n",
              shapes, worst);
}

// P = 2, m = 4, hand-derived from the eight steps (dualpipev.cc):
// rank 0 (stages 0, 3): 2 F0, 1 pair (F0, F1), 1 triple (I1 W F1), 1 steady
// round, 1 round B1 (F1;B0), 1 round B1 B0 then split ... as listed below.
TEST(DualPipeV, HandDerivedSmallCase) {
  ScheduleRequest req;
  req.schedule = "dualpipev";
  req.pp_size = 2;
  req.num_microbatches = 4;
  auto p = GenerateSchedule(req);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto join = [](const std::vector<Action>& list) {
    std::string s;
    for (const Action& a : list) s += (s.empty() ? "" : " ") + a.ToString();
    return s;
  };
  // rank 0: step 1: 0F0 0F1; step 2: 0F2 3F0; step 3: 3I0 3W0 3F1;
  // step 4 (m - 2P + 1 = 1 round): (0F3;3B1) (3F2;0B0); step 5: 3B2 (3F3;0B1);
  // step 6 (1 round, even rank: split after B1): 3B3 0I2; step 7: 0W2... see below.
  EXPECT_EQ(join(p->ranks[0]),
            "0F0 0F1 0F2 3F0 3I0 3W0 3F1 (0F3;3B1)OVERLAP_F_B (3F2;0B0)OVERLAP_F_B 3B2 (3F3;0B1)OVERLAP_F_B 3B3 0I2 "
            "0W2 0I3 0W3");
  // rank 1 (stages 1, 2): step 2: 2 x (1F, 2F); step 4 (2 rounds; the first
  // pair of the first runs unpaired on the last rank); step 6: 2 rounds, odd
  // rank: split from the second round's B1; step 8: 2 W's.
  EXPECT_EQ(join(p->ranks[1]),
            "1F0 2F0 1F1 2F1 1F2 2B0 (2F2;1B0)OVERLAP_F_B (1F3;2B1)OVERLAP_F_B (2F3;1B1)OVERLAP_F_B 2B2 1B2 2I3 1I3 "
            "2W3 1W3");
  auto lowered = AddSendRecv(*p, UniformCosts(4));
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  ValidateOptions opts;
  opts.rendezvous = true;
  EXPECT_TRUE(ValidateProgram(*lowered, opts).ok());
  // The pair (0F3;3B1) on rank 0 sends both halves' outputs: 0SEND_F3 and 3SEND_B1.
  const std::string r0 = join(lowered->ranks[0]);
  EXPECT_NE(r0.find("0SEND_F3"), std::string::npos) << r0;
  EXPECT_NE(r0.find("3SEND_B1"), std::string::npos) << r0;
  auto jit = AddSendRecv(*p, UniformCosts(4), LoweringStyle::kJustInTime);
  ASSERT_TRUE(jit.ok()) << jit.status().ToString();
  ValidateOptions eager;
  eager.rendezvous = false;  // just-in-time lowering is for buffered (eager) sends
  Status jst = ValidateProgram(*jit, eager);
  EXPECT_TRUE(jst.ok()) << jst.ToString();
  // Both halves' receives right before the pair, both sends right after.
  const std::string j0 = join(jit->ranks[0]);
  EXPECT_NE(j0.find("(0F3;3B1)OVERLAP_F_B 0SEND_F3 3SEND_B1"), std::string::npos) << j0;
  EXPECT_NE(j0.find("3RECV_F2 0RECV_B0 (3F2;0B0)OVERLAP_F_B"), std::string::npos) << j0;
}

// Rule 7 walked here, apart from the simulator: an OVERLAP_F_B is its F
// half's +activation, then its B half's -activation, two points, as the
// executor runs it (executor/interpreter.cc: Forward, then Backward). The
// simulator counted the pair as one point (issue #25), so the peak between
// the halves was missed: rank 0 of P = 2, m = 4 reaches 5 activations after
// the F half of (0F3;3B1), where the one-point walk says 4.
int64_t WalkPeak(const std::vector<Action>& list, const StageCosts& c, bool pair_as_one_point) {
  int64_t mem = 0, peak = 0;
  for (const Action& a : list) {
    const auto step = [&](int64_t d) {
      mem += d;
      peak = std::max(peak, mem);
    };
    switch (a.type) {
      case ActionType::kF:
        step(c.memory[a.stage].activation);
        break;
      case ActionType::kB:
        step(-c.memory[a.stage].activation);
        break;
      case ActionType::kI:
        step(c.memory[a.stage].wstash - c.memory[a.stage].activation);
        break;
      case ActionType::kW:
        step(-c.memory[a.stage].wstash);
        break;
      case ActionType::kOverlapFB:
        if (pair_as_one_point) {
          step(c.memory[a.stage].activation - c.memory[a.b_stage].activation);
        } else {
          step(c.memory[a.stage].activation);
          step(-c.memory[a.b_stage].activation);
        }
        break;
      default:
        break;
    }
  }
  return peak;
}

TEST(DualPipeV, PairHalvesAreTwoStepsOfTheMemoryWalk) {
  auto unit = RunPipeline("dualpipev", 2, 4, 2);
  ASSERT_TRUE(unit.ok()) << unit.status().ToString();
  EXPECT_EQ(unit->sim.per_rank[0].peak_memory_bytes, 5) << "rank 0: 5 activations after the F half of (0F3;3B1)";
  EXPECT_EQ(WalkPeak(unit->lowered.ranks[0], UniformCosts(4), true), 4) << "the one-point walk this replaces";
  int64_t worst = 0;
  int shapes = 0, higher = 0;
  for (int P = 2; P <= 6; ++P)
    for (int m : {2 * P, 3 * P + 1}) {
      StageCosts c = UniformCosts(2 * P);
      for (int s = 0; s < 2 * P; ++s) {  // distinct sizes per stage, so the halves' stages matter
        c.memory[s].activation = 1000 + 37 * s;
        c.memory[s].wstash = 500 + 11 * s;
      }
      auto pl = RunPipeline("dualpipev", P, m, 2, c);
      ASSERT_TRUE(pl.ok()) << "P=" << P << " m=" << m << ": " << pl.status().ToString();
      for (int r = 0; r < P; ++r) {
        const int64_t want = WalkPeak(pl->lowered.ranks[r], c, false);
        const int64_t got = pl->sim.per_rank[r].peak_memory_bytes - pl->sim.per_rank[r].start_memory_bytes;
        worst = std::max<int64_t>(worst, std::llabs(got - want));
        EXPECT_EQ(got, want) << "P=" << P << " m=" << m << " rank " << r;
        if (want > WalkPeak(pl->lowered.ranks[r], c, true)) ++higher;
      }
      ++shapes;
    }
  std::printf(
      "dualpipev memory walk: %d shapes (P 2..6), worst |simulated - walked peak| = %lld bytes; %d ranks peak "
      "between a pair's halves\n",
      shapes, static_cast<long long>(worst), higher);
  EXPECT_GT(higher, 0) << "no shape peaks between the halves: the test would not see a one-point walk";
}

TEST(DualPipeV, ValidatorRejectsPairOfOneStageAndMisplacedHalves) {
  ScheduleRequest req;
  req.schedule = "dualpipev";
  req.pp_size = 2;
  req.num_microbatches = 4;
  auto p = GenerateSchedule(req);
  ASSERT_TRUE(p.ok());
  Program bad = *p;
  for (Action& a : bad.ranks[0])
    if (IsOverlap(a.type)) {
      a.b_stage = 1;  // a stage of rank 1
      break;
    }
  Status st = ValidateProgram(bad);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("B half's stage 1 lives on rank 1"), std::string::npos) << st.ToString();
  bad = *p;
  for (Action& a : bad.ranks[0])
    if (IsOverlap(a.type)) {
      a.b_microbatch = 3;  // B of 3/3 before its forward 3F3
      break;
    }
  st = ValidateProgram(bad);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("its B half: backward before its forward"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace pw::testing
