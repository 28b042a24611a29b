// Equivalence of the pipelined executor (loopback ranks as threads, fp64)
// with a single-process run of the same model and batch, for every schedule
// family the generators produce. After one step: loss and every parameter's
// gradient; after 3 AdamW steps: every parameter. Tolerance: relative
// difference <= 1e-10 per tensor (max |a-b| / max |ref|).
#include <numeric>
#include <tuple>

#include "planner/optimal_milp.h"
#include "schedules/pipeline.h"
#include "schedules/registry.h"
#include "tests/executor/executor_test_util.h"

namespace pw::exec::testing {
namespace {

constexpr double kTolerance = 1e-10;
constexpr int kSeq = 8;

struct Case {
  std::string schedule;
  int pp;
  int m;
  std::vector<int> layers_per_stage;  // empty = default split
  std::vector<int> microbatch_sizes;  // empty = 2 rows each
};

std::string CaseName(const Case& c) {
  std::string s = c.schedule + " P=" + std::to_string(c.pp) + " m=" + std::to_string(c.m);
  if (!c.layers_per_stage.empty()) {
    s += " layers=";
    for (int x : c.layers_per_stage) s += std::to_string(x) + ",";
  }
  if (!c.microbatch_sizes.empty()) {
    s += " rows=";
    for (int x : c.microbatch_sizes) s += std::to_string(x) + ",";
  }
  return s;
}

// Every registered family x P in {2,3,4} x m in {1 (< P), P+1 (not divisible
// by P), 2P}.
std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const std::string& family : ScheduleNames())
    for (int p : {2, 3, 4})
      for (int m : {1, p + 1, 2 * p}) cases.push_back({family, p, m, {}, {}});
  // Explicitly uneven stages (the model has 8 blocks = 10 layers).
  cases.push_back({"1f1b", 3, 5, {5, 1, 4}, {}});
  cases.push_back({"zb-h1", 4, 6, {1, 2, 3, 4}, {}});
  cases.push_back({"interleaved-1f1b", 2, 3, {3, 1, 1, 5}, {}});
  cases.push_back({"zb-v", 2, 4, {1, 4, 3, 2}, {}});
  cases.push_back({"v-auto", 2, 4, {1, 4, 3, 2}, {}});
  // Unequal microbatches: 8 rows into 3, 3, 2.
  cases.push_back({"1f1b", 2, 3, {}, {3, 3, 2}});
  cases.push_back({"zb-h1", 3, 3, {}, {3, 3, 2}});
  return cases;
}

void PrintTo(const Case& c, std::ostream* os) { *os << CaseName(c); }

class EquivalenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(EquivalenceTest, MatchesSingleProcess) {
  const Case& c = GetParam();
  PlanSpec spec;
  spec.schedule = c.schedule;
  spec.pp_size = c.pp;
  spec.num_microbatches = c.m;
  spec.model = TinyModel(8);
  spec.seq_length = kSeq;
  spec.micro_batch_size = 2;
  spec.microbatch_sizes = c.microbatch_sizes;
  spec.layers_per_stage = c.layers_per_stage;
  spec.bytes_per_element = 8;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << CaseName(c) << ": cannot build the plan: " << plan.status().ToString();

  const int rows =
      c.microbatch_sizes.empty() ? 2 * c.m : std::accumulate(c.microbatch_sizes.begin(), c.microbatch_sizes.end(), 0);
  std::vector<TokenBatch> batches;
  for (int i = 0; i < 3; ++i) batches.push_back(RandomBatch(rows, kSeq, 100 + i));
  ExpectMatchesReference(*plan, batches, CaseName(c), kTolerance);
}

// The certified optimum (`--schedule optimal`, planner/optimal_milp.h) is not
// a registry family: its order is solved for a plan's own stage costs and
// put in place of ZB-H1's streams in the same plan (same split, model and
// batch), then run like any plan.
TEST(EquivalenceOptimal, MatchesSingleProcess) {
  for (const auto& [pp, m] : std::vector<std::pair<int, int>>{{2, 1}, {2, 3}, {3, 4}, {4, 4}}) {
    PlanSpec spec;
    spec.schedule = "zb-h1";
    spec.pp_size = pp;
    spec.num_microbatches = m;
    spec.model = TinyModel(8);
    spec.seq_length = kSeq;
    spec.micro_batch_size = 2;
    spec.bytes_per_element = 8;
    StatusOr<Plan> plan = BuildPlan(spec);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    const StageCosts costs = PlanCosts(*plan);
    ScheduleRequest req;
    req.schedule = "optimal";
    req.pp_size = pp;
    req.num_microbatches = m;
    req.costs = costs;
    OptimalOptions oo;
    oo.time_limit_s = 5;
    StatusOr<OptimalResult> opt = SolveOptimalSchedule(req, oo);
    ASSERT_TRUE(opt.ok()) << opt.status().ToString();
    StatusOr<PipelineResult> run = SimulateOrder(opt->program, costs);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    const Plan fresh = MakePlan("optimal", run->lowered, costs, run->sim, plan->memory_limit_bytes);
    plan->schedule = "optimal";
    plan->ranks = fresh.ranks;
    plan->predicted = fresh.predicted;
    std::vector<TokenBatch> batches;
    for (int i = 0; i < 3; ++i) batches.push_back(RandomBatch(2 * m, kSeq, 200 + i));
    ExpectMatchesReference(*plan, batches, "optimal P=" + std::to_string(pp) + " m=" + std::to_string(m), kTolerance);
  }
}

// Global-norm clipping across ranks (an all-gather of each rank's sum of
// squares) against LibTorch's clip_grad_norm_ on the whole model: the max
// norm is far below the gradient norm, so every step clips.
TEST(EquivalenceClipTest, ClippedStepsMatchClipGradNorm) {
  for (const auto& [schedule, pp, m] :
       std::vector<std::tuple<std::string, int, int>>{{"1f1b", 2, 3}, {"zb-h1", 3, 4}, {"zb-v", 2, 4}}) {
    PlanSpec spec;
    spec.schedule = schedule;
    spec.pp_size = pp;
    spec.num_microbatches = m;
    spec.model = TinyModel(8);
    spec.seq_length = kSeq;
    spec.micro_batch_size = 2;
    spec.bytes_per_element = 8;
    spec.clip_grad_norm = 0.05;
    StatusOr<Plan> plan = BuildPlan(spec);
    ASSERT_TRUE(plan.ok()) << schedule << ": " << plan.status().ToString();
    std::vector<TokenBatch> batches;
    for (int i = 0; i < 3; ++i) batches.push_back(RandomBatch(2 * m, kSeq, 200 + i));
    EngineOptions options = Fp64Options();
    options.clip_grad_norm = spec.clip_grad_norm;
    std::vector<RankRun> runs = RunLoopback(*plan, pp, batches, options, /*timeout_s=*/20.0);
    ReferenceRun ref = RunReference(*plan->model, batches, options);
    ASSERT_TRUE(ref.status.ok()) << ref.status.ToString();
    std::vector<NamedValues> grads, params;
    for (int r = 0; r < pp; ++r) {
      ASSERT_TRUE(runs[r].status.ok()) << schedule << ": rank " << r << ": " << runs[r].status.ToString();
      grads.insert(grads.end(), runs[r].grads_after_first.begin(), runs[r].grads_after_first.end());
      params.insert(params.end(), runs[r].params_after_last.begin(), runs[r].params_after_last.end());
    }
    const double norm = runs[0].reports[0].grad_norm;
    EXPECT_GT(norm, 10 * spec.clip_grad_norm) << schedule << ": the step did not clip";
    for (int r = 1; r < pp; ++r)
      EXPECT_EQ(runs[r].reports[0].grad_norm, norm) << "rank " << r << " clipped differently";
    Diff g = WorstDiff(grads, ref.grads_after_first);
    EXPECT_LE(g.rel, kTolerance) << schedule << ": clipped gradients after step 1: " << Describe(g);
    Diff p = WorstDiff(params, ref.params_after_last);
    EXPECT_LE(p.rel, kTolerance) << schedule << ": parameters after 3 clipped steps: " << Describe(p);
    std::printf("[ clip     ] %-10s P=%d m=%d grad norm %.6f (max 0.05) grad rel %.2e param rel %.2e\n",
                schedule.c_str(), pp, m, norm, g.rel, p.rel);
  }
}

// A data-parallel plan on a communicator without data-parallel groups
// (loopback here; tcp, the torchrun launch, shares the refusal): every rank
// refuses before any compute, naming dp_size, the planner flag and the
// launchers that can run it.
TEST(DataParallelRefusalTest, CommunicatorWithoutGroupsRefusesOnEveryRank) {
  PlanSpec spec;
  spec.schedule = "1f1b";
  spec.pp_size = 2;
  spec.num_microbatches = 2;
  spec.model = TinyModel(2);
  spec.seq_length = kSeq;
  spec.bytes_per_element = 8;  // Fp64Options
  spec.dp_size = 2;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::vector<RankRun> runs = RunLoopback(*plan, 4, {RandomBatch(2, kSeq, 1)}, Fp64Options(), /*timeout_s=*/20.0);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(runs[r].status.code(), StatusCode::kInvalidArgument) << "rank " << r << ": " << runs[r].status.ToString();
    for (const char* want : {"dp_size", "--dp", "launch/mpirun.sh", "loopback"})
      EXPECT_NE(runs[r].status.message().find(want), std::string::npos)
          << "rank " << r << ": no '" << want << "' in: " << runs[r].status.ToString();
    EXPECT_TRUE(runs[r].reports.empty()) << "rank " << r << " computed a step";
  }
}

// A tensor-parallel plan on a communicator that cannot split (loopback;
// tcp shares it, tests/executor/tp_cli_test.sh): every rank refuses before
// any compute, naming tp_size, the communicator and --comm mpi.
TEST(TensorParallelRefusalTest, CommunicatorWithoutGroupsRefusesOnEveryRank) {
  PlanSpec spec;
  spec.schedule = "1f1b";
  spec.pp_size = 2;
  spec.num_microbatches = 2;
  spec.model = TinyModel(2);
  spec.seq_length = kSeq;
  spec.bytes_per_element = 8;  // Fp64Options
  spec.tp_size = 2;
  StatusOr<Plan> plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::vector<RankRun> runs = RunLoopback(*plan, 4, {RandomBatch(2, kSeq, 1)}, Fp64Options(), /*timeout_s=*/20.0);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(runs[r].status.code(), StatusCode::kInvalidArgument) << "rank " << r << ": " << runs[r].status.ToString();
    for (const char* want : {"tp_size", "loopback communicator cannot form tensor-parallel groups", "--comm mpi"})
      EXPECT_NE(runs[r].status.message().find(want), std::string::npos)
          << "rank " << r << ": no '" << want << "' in: " << runs[r].status.ToString();
    EXPECT_TRUE(runs[r].reports.empty()) << "rank " << r << " computed a step";
  }
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, EquivalenceTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = CaseName(info.param);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n + "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace pw::exec::testing
