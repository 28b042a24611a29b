// Cases from public bug reports in other pipeline systems, and the failure
// messages of the validator.
#include <gtest/gtest.h>

#include "schedules/csv.h"
#include "tests/testing/schedule_util.h"

namespace pw::testing {
namespace {

// Plain program-order lowering (SEND right after the producer, RECV right
// before the consumer) hangs 1F1B on unbuffered sends: rank r blocks in
// SEND_F while rank r+1 blocks in SEND_B (the classic 1F1B NCCL hang).
TEST(BugReports, NaiveLoweringOf1F1BDeadlocksUnderRendezvousOnly) {
  auto pl = RunPipeline("1f1b", 4, 8);
  ASSERT_TRUE(pl.ok()) << pl.status().ToString();
  auto naive = AddSendRecv(pl->compute, UniformCosts(4), LoweringStyle::kJustInTime);
  ASSERT_TRUE(naive.ok()) << naive.status().ToString();
  ValidateOptions eager;
  eager.rendezvous = false;
  Status st = ValidateProgram(*naive, eager);
  EXPECT_TRUE(st.ok()) << st.ToString();
  st = CheckRendezvous(*naive);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("deadlock under rendezvous"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("<-- ERROR HERE"), std::string::npos) << st.message();
  // Our lowering of the same order passes both.
  EXPECT_TRUE(CheckRendezvous(pl->lowered).ok());
  auto sim_naive = Simulate(*naive, UniformCosts(4));
  ASSERT_TRUE(sim_naive.ok());
  EXPECT_DOUBLE_EQ(sim_naive->makespan_s, pl->sim.makespan_s);
}

TEST(BugReports, OneMicrobatchOnEightRanks) {
  auto pl = RunPipeline("1f1b", 8, 1);
  ASSERT_TRUE(pl.ok()) << pl.status().ToString();
  EXPECT_DOUBLE_EQ(pl->sim.makespan_s, 24.0);
}

TEST(BugReports, TorchtitanCustomScheduleCsvImportsLowersAndSimulates) {
  auto program = ReadScheduleCsv(std::string(PW_SOURCE_DIR) + "/tests/testdata/peers/torchtitan-custom_schedule.csv");
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_EQ(program->pp_size, 2);
  EXPECT_EQ(program->num_stages, 4);
  EXPECT_EQ(program->num_microbatches, 8);
  EXPECT_EQ(program->stage_to_rank, (std::vector<int>{0, 1, 0, 1}));
  PW_ASSERT_OK(ValidateProgram(*program));
  auto lowered = AddSendRecv(*program, UniformCosts(4));
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  PW_ASSERT_OK(ValidateProgram(*lowered));
  auto sim = Simulate(*lowered, UniformCosts(4));
  ASSERT_TRUE(sim.ok());
  // 4 stages x 8 microbatches x (F + I + W) = 96 unit actions over 2 ranks.
  EXPECT_DOUBLE_EQ(sim->per_rank[0].busy_s + sim->per_rank[1].busy_s, 96.0);
  std::printf("torchtitan custom_schedule.csv: makespan %.0f, bubble ratio %.4f\n", sim->makespan_s, sim->bubble_ratio);
  // Export compute_only and read back: the same program.
  auto again = ParseScheduleCsv(ScheduleToCsv(*program, CsvFormat::kComputeOnly));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ranks, program->ranks);
}

TEST(BugReports, CsvWithStrayWhitespaceAndIdleCellsRoundTrips) {
  const std::string text =
      " 0F0 , 0F1,\t0I0 ,, 0W0,0I1 , 0W1 \r\n"
      ",1F0,1I0,1W0 ,1F1, 1I1,1W1\n"
      "\n";
  auto p = ParseScheduleCsv(text, "ws.csv");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->pp_size, 2);
  EXPECT_EQ(p->ranks[0].size(), 6u);
  PW_ASSERT_OK(ValidateProgram(*p));
  std::string out = ScheduleToCsv(*p, CsvFormat::kComputeOnly);
  EXPECT_EQ(out, "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n");
  auto again = ParseScheduleCsv(out);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ranks, p->ranks);
  // compute_comms round trip of the lowered form.
  auto lowered = AddSendRecv(*p, UniformCosts(2));
  ASSERT_TRUE(lowered.ok());
  auto comms = ParseScheduleCsv(ScheduleToCsv(*lowered, CsvFormat::kComputeComms));
  ASSERT_TRUE(comms.ok());
  EXPECT_EQ(comms->ranks, lowered->ranks);
}

TEST(BugReports, CsvBadTokenNamesRowAndColumn) {
  auto p = ParseScheduleCsv("0F0,0F1,0B0,0B1\n1F0,1B0,1X1,1B1\n", "bad.csv");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("bad.csv: row 2, column 3"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("'1X1'"), std::string::npos) << p.status().message();
  auto old = ParseScheduleCsv("0F0,0BW0\n", "old.csv");  // PyTorch's old BW token
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("row 1, column 2"), std::string::npos) << old.status().message();
}

TEST(BugReports, CsvStageOnTwoRanksIsRejected) {
  auto p = ParseScheduleCsv("0F0,1F0\n1B0,0B0\n", "two.csv");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("stage 1 appears on rows 1 and 2"), std::string::npos) << p.status().message();
}

TEST(Validator, MissingBackwardNamesStageMicrobatchAndShowsGrid) {
  Program p;
  p.pp_size = 2;
  p.num_stages = 2;
  p.num_microbatches = 2;
  p.stage_to_rank = {0, 1};
  p.ranks = {{MakeAction(0, ActionType::kF, 0), MakeAction(0, ActionType::kF, 1), MakeAction(0, ActionType::kB, 0)},
             {MakeAction(1, ActionType::kF, 0), MakeAction(1, ActionType::kB, 0), MakeAction(1, ActionType::kF, 1),
              MakeAction(1, ActionType::kB, 1)}};
  Status st = ValidateProgram(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("stage 0 microbatch 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("<-- ERROR HERE"), std::string::npos) << st.message();
}

TEST(Validator, WrongOrderIsMarkedInTheGrid) {
  Program p;
  p.pp_size = 1;
  p.num_stages = 1;
  p.num_microbatches = 1;
  p.stage_to_rank = {0};
  p.ranks = {{MakeAction(0, ActionType::kF, 0), MakeAction(0, ActionType::kW, 0), MakeAction(0, ActionType::kI, 0)}};
  Status st = ValidateProgram(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 0, action 1 '0W0'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("[0W0]"), std::string::npos) << st.message();
}

TEST(Validator, CrossRankDeadlockIsReportedWithEveryStuckRank) {
  // Rank 0 waits for microbatch 0's gradient before running microbatch 1's
  // forward, while rank 1 insists on microbatch 1 first: a cycle.
  Program p;
  p.pp_size = 2;
  p.num_stages = 2;
  p.num_microbatches = 2;
  p.stage_to_rank = {0, 1};
  p.ranks = {{MakeAction(0, ActionType::kF, 0), MakeAction(0, ActionType::kB, 0), MakeAction(0, ActionType::kF, 1),
              MakeAction(0, ActionType::kB, 1)},
             {MakeAction(1, ActionType::kF, 1), MakeAction(1, ActionType::kB, 1), MakeAction(1, ActionType::kF, 0),
              MakeAction(1, ActionType::kB, 0)}};
  Status st = ValidateProgram(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("deadlock"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("rank 0 is stuck"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("rank 1 is stuck"), std::string::npos) << st.message();
}

TEST(Validator, FifoMismatchIsNamed) {
  // Rank 0 sends microbatch 1 before microbatch 0; rank 1 posts receives in
  // the other order: the channel's k-th messages disagree.
  Program p;
  p.pp_size = 2;
  p.num_stages = 2;
  p.num_microbatches = 2;
  p.stage_to_rank = {0, 1};
  auto A = [](int s, ActionType t, int mb) { return MakeAction(s, t, mb); };
  using T = ActionType;
  p.ranks = {{A(0, T::kF, 1), A(0, T::kSendF, 1), A(0, T::kF, 0), A(0, T::kSendF, 0), A(0, T::kRecvB, 0),
              A(0, T::kB, 0), A(0, T::kRecvB, 1), A(0, T::kB, 1)},
             {A(1, T::kRecvF, 0), A(1, T::kF, 0), A(1, T::kB, 0), A(1, T::kSendB, 0), A(1, T::kRecvF, 1),
              A(1, T::kF, 1), A(1, T::kB, 1), A(1, T::kSendB, 1)}};
  Status st = ValidateProgram(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("FIFO mismatch"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace pw::testing

namespace pw::testing {
namespace {

// NCCL matches the messages between two ranks in posting order, whatever
// the direction: every lowered plan of ours keeps one FIFO per rank pair, and
// a plan whose sends to one peer are swapped across directions is caught
// (it still runs over MPI, where the direction is the tag).
TEST(BugReports, PairOrderHoldsForEveryFamilyAndCatchesCrossChannelSwaps) {
  int checked = 0;
  for (const std::string& name : ScheduleNames())
    for (int P : {2, 3, 4})
      for (int m : {1, P, 2 * P + 1}) {
        auto pl = RunPipeline(name, P, m);
        if (!pl.ok()) continue;  // a shape the family refuses
        Status st = CheckPairOrder(pl->lowered);
        EXPECT_TRUE(st.ok()) << name << " P=" << P << " m=" << m << ": " << st.ToString();
        ++checked;
      }
  EXPECT_GT(checked, 50);
  // ZB-V on 2 ranks: rank 0 sends forwards (stage 0 -> 1) and backwards
  // (stage 3 -> 2) to rank 1. Post one SEND_F after the next SEND_B.
  auto pl = RunPipeline("zb-v", 2, 4);
  ASSERT_TRUE(pl.ok()) << pl.status().ToString();
  Program swapped = pl->lowered;
  ASSERT_TRUE(PostASendFAfterTheNextSendB(&swapped.ranks[0]));
  ValidateOptions eager;
  eager.rendezvous = false;
  EXPECT_TRUE(ValidateProgram(swapped, eager).ok()) << "the swap is valid with posted receives (MPI)";
  Status st = CheckPairOrder(swapped);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("from rank 0 to rank 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("one FIFO per rank pair (NCCL)"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace pw::testing
