// Data parallel x pipeline (#13), torch-free: the ring collective time model
// against its closed form, the device link choice, a hand-computed simulation
// of 1F1B with exposed and hidden reductions, the validator's rule 10, the
// planner's batch divisibility errors, --num-devices and the plan fields.
#include "planner/data_parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "models/spec/device.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/explain.h"
#include "planner/planner.h"
#include "schedules/lower.h"
#include "schedules/pipeline.h"
#include "schedules/validate.h"

namespace pw {
namespace {

constexpr double kGB = 1e9;

TEST(DataParallelModel, RingCollectivesMatchTheirClosedForm) {
  const CommModel link{1e-5, 4.5e11};
  double worst = 0;
  for (int D : {2, 3, 8, 64})
    for (int64_t n : {int64_t{1}, int64_t{1} << 20, int64_t{13} * 1000 * 1000 * 1000}) {
      const double ar = 2.0 * (D - 1) / D * static_cast<double>(n) / 4.5e11 + 1e-5;
      const double rs = 1.0 * (D - 1) / D * static_cast<double>(n) / 4.5e11 + 1e-5;
      worst = std::max(worst, std::fabs(RingAllReduceSeconds(n, D, link) - ar) / ar);
      worst = std::max(worst, std::fabs(RingReduceScatterSeconds(n, D, link) - rs) / rs);
    }
  std::printf("worst relative difference to the closed form: %.3g\n", worst);
  EXPECT_LT(worst, 1e-12);
  EXPECT_EQ(RingAllReduceSeconds(int64_t{1} << 30, 1, link), 0.0) << "one replica: nothing to reduce";
  EXPECT_EQ(RingAllReduceSeconds(0, 8, link), 0.0);
  // 100 MiB in 25 MiB buckets: the bandwidth term once, 4 latencies; 101 MiB: 5.
  const int64_t mib = int64_t{1} << 20;
  const double bw = 2.0 * 7 / 8 * static_cast<double>(100 * mib) / 4.5e11;
  EXPECT_NEAR(BucketedAllReduceSeconds(100 * mib, 8, link), bw + 4e-5, 1e-15);
  EXPECT_NEAR(BucketedAllReduceSeconds(101 * mib, 8, link),
              2.0 * 7 / 8 * static_cast<double>(101 * mib) / 4.5e11 + 5e-5, 1e-15);
}

TEST(DataParallelModel, StageReductionAndZeroOneMemory) {
  DataParallelSpec dp;
  dp.dp_size = 8;
  dp.link = CommModel{1e-5, 5e10};
  dp.precision = Precision::kMixedBf16;
  const int64_t params = 1000 * 1000 * 1000;  // 1e9 parameters: 4 GB of fp32 gradients
  const int64_t buckets = (4 * params + kDataParallelBucketBytes - 1) / kDataParallelBucketBytes;
  EXPECT_NEAR(StageReduceSeconds(params, dp), 2.0 * 7 / 8 * 4 * kGB / 5e10 + buckets * 1e-5, 1e-12);
  EXPECT_EQ(StaticBytesOfParams(params, dp), 18 * params);
  EXPECT_EQ(ReduceBufferBytes(params, dp), 4 * params);
  dp.distributed_optimizer = true;
  // ZeRO-1: reduce-scatter of 4 B/param gradients + all-gather of 2 B/param
  // bf16 parameters; each rank keeps 6 + 12/8 = 7.5 B/param (Megatron).
  EXPECT_NEAR(StageReduceSeconds(params, dp), 7.0 / 8 * 4 * kGB / 5e10 + 7.0 / 8 * 2 * kGB / 5e10 + 2e-5, 1e-12);
  EXPECT_EQ(StaticBytesOfParams(params, dp), params * 15 / 2);
  dp.precision = Precision::kFp64;  // 8 + 8 + 16 / D
  EXPECT_EQ(StaticBytesOfParams(params, dp), 16 * params + 2 * params);
  dp.dp_size = 1;
  EXPECT_EQ(StageReduceSeconds(params, dp), 0.0);
  EXPECT_EQ(ReduceBufferBytes(params, dp), 0);
}

TEST(DataParallelModel, DeviceLinkIsIntraNodeOnlyWhenTheGroupFitsANode) {
  auto d = LoadDeviceSpec("H100-80GB");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->gpus_per_node, 8);
  // Groups of D adjacent ranks (g = pp_rank * D + dp_rank) stay in a node iff D divides 8.
  for (int D : {2, 4, 8}) EXPECT_EQ(d->DataParallelLink(D).bandwidth_bytes_per_s, 4.5e11) << D;
  for (int D : {3, 5, 16, 64}) EXPECT_EQ(d->DataParallelLink(D).bandwidth_bytes_per_s, 5e10) << D;
  // A spec without the fields: one device per node, the p2p link.
  nlohmann::json j = DeviceSpecToJson(*d);
  j.erase("gpus_per_node");
  j.erase("intra_node_bandwidth_bytes_per_s");
  j.erase("inter_node_bandwidth_bytes_per_s");
  auto plain = ParseDeviceSpec(j, "plain.json");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->DataParallelLink(2).bandwidth_bytes_per_s, plain->p2p_bandwidth_bytes_per_s);
  j["gpus_per_node"] = 0;
  auto bad = ParseDeviceSpec(j, "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gpus_per_node"), std::string::npos) << bad.status().message();
}

// 1F1B, P = 2, m = 2, F = 1 s, B = 2 s, free messages. By hand: rank 1 runs
// F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7]; rank 0 F0 [0,1] F1 [1,2] B0 [4,6]
// B1 [7,9]. Stage 1's REDUCE_GRAD starts at 7 on rank 1, stage 0's at 9 on
// rank 0: makespan = max(9 + r0, 7 + r1).
StatusOr<PipelineResult> OneFOneBWithReductions(double r0, double r1, int dp_size = 2) {
  ScheduleRequest req;
  req.schedule = "1f1b";
  req.pp_size = 2;
  req.num_microbatches = 2;
  req.dp_size = dp_size;
  StageCost c;
  c.f = 1;
  c.i = 1;
  c.w = 1;
  req.costs = UniformCosts(2, c);
  req.costs.stages[0].reduce_grad = r0;
  req.costs.stages[1].reduce_grad = r1;
  return RunPipeline(req);
}

TEST(DataParallelSimulation, OneFOneBExposedAndHiddenReductionsByHand) {
  struct Case {
    double r0, r1, makespan, exposed;
  } cases[] = {
      {0, 0, 9, 0},           // no reduction time: today's 1F1B
      {0.25, 2, 9.25, 0.25},  // stage 1's 2 s hidden behind rank 0's B1 (ends at 9), stage 0's 0.25 s exposed
      {0.5, 3, 10, 1},        // stage 1's 3 s ends at 10: 1 s exposed
  };
  double worst = 0;
  for (const Case& k : cases) {
    auto run = OneFOneBWithReductions(k.r0, k.r1);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    const SimResult& sim = run->sim;
    worst = std::max(worst, std::fabs(sim.makespan_s - k.makespan));
    double last_compute = std::max(sim.per_rank[0].last_compute_end_s, sim.per_rank[1].last_compute_end_s);
    EXPECT_NEAR(last_compute, 9, 1e-12);
    worst = std::max(worst, std::fabs((sim.makespan_s - last_compute) - k.exposed));
    // The bubble counts the exposed reduction as idle: 1 - 12 / (2 x makespan).
    EXPECT_NEAR(sim.bubble_ratio, 1 - 12.0 / (2 * k.makespan), 1e-12);
    // Placement: right after the stage's last backward (and the SEND right after it).
    const auto& r0list = run->lowered.ranks[0];
    const auto& r1list = run->lowered.ranks[1];
    EXPECT_EQ(r0list.back().ToString(), "0REDUCE_GRAD");
    EXPECT_EQ(r0list[r0list.size() - 2].ToString(), "0B1");
    EXPECT_EQ(r1list.back().ToString(), "1REDUCE_GRAD");
    EXPECT_EQ(r1list[r1list.size() - 2].ToString(), "1SEND_B1");
    EXPECT_EQ(r1list[r1list.size() - 3].ToString(), "1B1");
    EXPECT_NEAR(sim.timing[1].back().start, 7, 1e-12);
    EXPECT_NEAR(sim.timing[1].back().end, 7 + k.r1, 1e-12);
  }
  std::printf("worst difference to the hand-computed makespan / exposed time: %.3g s\n", worst);
  EXPECT_LT(worst, 1e-12);
  // dp_size 1: no reduction in the streams, whatever the costs say.
  auto single = OneFOneBWithReductions(5, 5, 1);
  ASSERT_TRUE(single.ok());
  for (const auto& list : single->lowered.ranks)
    for (const Action& a : list) EXPECT_FALSE(IsReduceGrad(a.type)) << a.ToString();
  EXPECT_NEAR(single->sim.makespan_s, 9, 1e-12);
}

TEST(DataParallelSimulation, ReductionsOfOneRankShareItsLaneInOrder) {
  // Interleaved 1F1B, P = 2, v = 2: rank 0 holds stages 0 and 2. Stage 2's
  // reduction is posted first; stage 0's starts when the rank reaches it or
  // when stage 2's is done, whichever is later.
  ScheduleRequest req;
  req.schedule = "interleaved-1f1b";
  req.pp_size = 2;
  req.num_microbatches = 4;
  req.virtual_stages = 2;
  req.dp_size = 4;
  req.costs = UniformCosts(4);
  for (auto& s : req.costs.stages) s.reduce_grad = 50;  // longer than the whole compute
  auto run = RunPipeline(req);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (int r = 0; r < 2; ++r) {
    std::vector<std::pair<int, ActionTiming>> reductions;
    for (size_t i = 0; i < run->lowered.ranks[r].size(); ++i)
      if (IsReduceGrad(run->lowered.ranks[r][i].type))
        reductions.push_back({run->lowered.ranks[r][i].stage, run->sim.timing[r][i]});
    ASSERT_EQ(reductions.size(), 2u) << "rank " << r;
    EXPECT_EQ(reductions[0].first, r + 2) << "the later stage finishes its backward first";
    EXPECT_NEAR(reductions[1].second.start, reductions[0].second.end, 1e-12) << "serialised on the lane";
    EXPECT_NEAR(reductions[1].second.end, reductions[0].second.start + 100, 1e-12);
    EXPECT_LE(reductions[1].second.end, run->sim.makespan_s);
  }
}

TEST(DataParallelValidator, RuleTenNamesWhere) {
  auto run = OneFOneBWithReductions(1, 1);
  ASSERT_TRUE(run.ok());
  const Program good = run->lowered;
  EXPECT_TRUE(ValidateProgram(good).ok());
  struct Case {
    std::function<void(Program&)> edit;
    std::string expect;
  } cases[] = {
      {[](Program& p) { p.ranks[1].pop_back(); }, "stage 1 (rank 1) has no REDUCE_GRAD but dp_size is 2"},
      {[](Program& p) { p.dp_size = 1; },
       "rank 0, action 8 '0REDUCE_GRAD': a gradient reduction in a program with dp_size 1"},
      {[](Program& p) { p.ranks[0].push_back(MakeAction(0, ActionType::kReduceGrad, -1)); },
       "a second REDUCE_GRAD of stage 0 (the first is action 8)"},
      {[](Program& p) {  // move rank 0's reduction before its last backward
         p.ranks[0].pop_back();
         p.ranks[0].insert(p.ranks[0].end() - 1, MakeAction(0, ActionType::kReduceGrad, -1));
       },
       "the gradient reduction of stage 0 comes before its backward '0B1' (action 8)"},
      {[](Program& p) { p.ranks[0].back().microbatch = 3; }, "REDUCE_GRAD has microbatch -1, not 3"},
      {[](Program& p) { p.ranks[0].back().stage = 1; }, "stage 1 lives on rank 1"},
  };
  for (auto& c : cases) {
    Program p = good;
    c.edit(p);
    Status st = ValidateProgram(p);
    ASSERT_FALSE(st.ok()) << c.expect;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
    if (c.expect.find("lives on") == std::string::npos && c.expect.find("microbatch -1") == std::string::npos) {
      EXPECT_NE(st.message().find("<-- ERROR HERE"), std::string::npos) << "the grid marks the place";
    }
  }
  // AddReduceGrad refuses a program that already has them.
  EXPECT_FALSE(AddReduceGrad(good).ok());
}

TEST(DataParallelPlanner, BatchDivisibilityErrorsNameTheNumbers) {
  PlannerOptions o;
  o.pp_size = 2;
  o.dp_size = 3;
  o.global_batch_size = 1024;
  auto r = ResolveBatch(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--global-batch-size 1024 is not divisible by --data-parallel-size 3"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("1023 or 1026"), std::string::npos) << r.status().message();
  o.dp_size = 8;
  o.micro_batch_size = 3;
  r = ResolveBatch(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not divisible by --micro-batch-size 3 x --data-parallel-size 8 = 24"),
            std::string::npos)
      << r.status().message();
  o.micro_batch_size.reset();
  o.num_microbatches = 200;
  r = ResolveBatch(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("= 128 sequences per replica is smaller than --num-microbatches 200"),
            std::string::npos)
      << r.status().message();
  // Global = dp x micro-batch x m.
  o.num_microbatches.reset();
  o.micro_batch_size = 4;
  r = ResolveBatch(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].num_microbatches, 32);
  EXPECT_EQ((*r)[0].global_batch_size, 1024);
  EXPECT_EQ((*r)[0].microbatch_sizes, std::vector<int64_t>(32, 4));
  o.global_batch_size.reset();
  o.num_microbatches = 6;
  r = ResolveBatch(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].global_batch_size, 8 * 4 * 6);
  // ZeRO-1 needs replicas.
  PlannerModel m;
  m.config = *LoadModelConfig("gpt2");
  m.device = *LoadDeviceSpec("H100-80GB");
  PlannerOptions z;
  z.pp_size = 2;
  z.num_microbatches = 4;
  z.distributed_optimizer = true;
  auto zr = SearchPlans(m, z);
  ASSERT_FALSE(zr.ok());
  EXPECT_NE(zr.status().message().find("--use-distributed-optimizer"), std::string::npos) << zr.status().message();
}

PlannerModel Gpt2OnH100() {
  PlannerModel m;
  m.config = *LoadModelConfig("gpt2");
  m.device = *LoadDeviceSpec("H100-80GB");
  return m;
}

PlannerOptions SmallSearch() {
  PlannerOptions o;
  o.global_batch_size = 64;
  o.micro_batch_size = 1;
  o.seq_length = 512;
  o.schedules = {"1f1b", "zb-h1"};
  o.recompute = Recompute::kNone;
  o.find_min_pp = false;
  return o;
}

TEST(DataParallelPlanner, NumDevicesChoosesTheFastestSplit) {
  const PlannerModel m = Gpt2OnH100();
  auto s = SearchDeviceSplits(m, SmallSearch(), 8);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->splits.size(), 4u);  // 1 x 8, 2 x 4, 4 x 2, 8 x 1
  double best = 1e30;
  for (const DeviceSplit& sp : s->splits) {
    EXPECT_EQ(sp.pp_size * sp.dp_size, 8);
    ASSERT_TRUE(sp.feasible()) << sp.reason;
    const Candidate& c = sp.result.candidates[sp.result.chosen];
    best = std::min(best, c.step_s);
    // Each split is the same search as --pp P --dp D.
    PlannerOptions o = SmallSearch();
    o.pp_size = sp.pp_size;
    o.dp_size = sp.dp_size;
    auto direct = SearchPlans(m, o);
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    EXPECT_EQ(direct->candidates[direct->chosen].step_s, c.step_s);
    EXPECT_EQ(c.batch.global_batch_size, 64);
    EXPECT_EQ(c.batch.num_microbatches, 64 / sp.dp_size);
    if (sp.dp_size > 1) {
      EXPECT_GT(c.reduce_s, 0);
    }
  }
  const DeviceSplit& chosen = s->splits[s->chosen];
  EXPECT_EQ(chosen.result.candidates[chosen.result.chosen].step_s, best);
  const std::string table = FormatDeviceSplits(*s);
  EXPECT_NE(table.find("splits of 8 devices"), std::string::npos) << table;
  std::printf("%s", table.c_str());
  // A split whose D does not divide the batch is reported, not searched.
  PlannerOptions odd = SmallSearch();
  odd.global_batch_size = 60;
  auto s6 = SearchDeviceSplits(m, odd, 8);
  ASSERT_TRUE(s6.ok()) << s6.status().ToString();
  EXPECT_FALSE(s6->splits[0].searched);
  EXPECT_NE(s6->splits[0].reason.find("--global-batch-size 60 is not divisible by --data-parallel-size 8"),
            std::string::npos)
      << s6->splits[0].reason;
  EXPECT_FALSE(SearchDeviceSplits(m, SmallSearch(), 0).ok());
}

TEST(DataParallelPlanner, ZeroOneShrinksStaticMemoryAndThePlanRoundTrips) {
  const PlannerModel m = Gpt2OnH100();
  PlannerOptions o = SmallSearch();
  o.pp_size = 2;
  o.dp_size = 4;
  auto plain = SearchPlans(m, o);
  o.distributed_optimizer = true;
  auto zero = SearchPlans(m, o);
  ASSERT_TRUE(plain.ok() && zero.ok());
  const Candidate& a = plain->candidates[plain->chosen];
  const Candidate& b = zero->candidates[zero->chosen];
  // bf16: 18 -> 6 + 12/4 = 9 bytes per parameter (rounding up per layer).
  const double ratio = static_cast<double>(b.static_bytes[1]) / static_cast<double>(a.static_bytes[1]);
  EXPECT_NEAR(ratio, 9.0 / 18.0, 1e-6);
  auto plan = BuildPlan(*zero, m, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->dp_size, 4);
  ASSERT_TRUE(plan->training.has_value());
  EXPECT_TRUE(plan->training->distributed_optimizer);
  EXPECT_EQ(plan->training->global_batch_size, 64);
  int reductions = 0;
  for (const auto& list : plan->ranks)
    for (const Action& a2 : list) reductions += IsReduceGrad(a2.type);
  EXPECT_EQ(reductions, plan->num_stages);
  EXPECT_GT(plan->stages[0].cost.reduce_grad, 0);
  EXPECT_GT(plan->stages[0].memory.reduce_buffer, 0);
  const std::string text = PlanToJson(*plan);
  EXPECT_NE(text.find("\"0REDUCE_GRAD\""), std::string::npos);
  auto back = ParsePlan(text, "dp.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(PlanToJson(*back), text);
  EXPECT_TRUE(ValidateProgram(PlanProgram(*back)).ok());
  auto resim = Simulate(PlanProgram(*back), PlanCosts(*back));
  ASSERT_TRUE(resim.ok());
  EXPECT_DOUBLE_EQ(resim->makespan_s, plan->predicted.makespan_s);
  // Bad files name the field; today's (dp 1) files without the new field still read.
  nlohmann::json doc = nlohmann::json::parse(text);
  doc["training"]["global_batch_size"] = 16;
  auto bad = ParsePlan(doc.dump(), "dp.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("is not dp_size x the sum of microbatch_sizes (4 x 16 = 64)"),
            std::string::npos)
      << bad.status().message();
  o.dp_size = 1;
  o.distributed_optimizer = false;
  auto single = SearchPlans(m, o);
  ASSERT_TRUE(single.ok());
  auto p1 = BuildPlan(*single, m, o);
  ASSERT_TRUE(p1.ok());
  nlohmann::json old = nlohmann::json::parse(PlanToJson(*p1));
  EXPECT_EQ(old["training"]["distributed_optimizer"], false);
  old["training"].erase("distributed_optimizer");
  auto read_old = ParsePlan(old.dump(), "old.json");
  ASSERT_TRUE(read_old.ok()) << read_old.status().ToString();
  EXPECT_FALSE(read_old->training->distributed_optimizer);
  EXPECT_EQ(PlanToJson(*read_old), PlanToJson(*p1));
}

}  // namespace
}  // namespace pw
