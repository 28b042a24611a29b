// The certified optimum (planner/optimal_milp.h) against closed forms, the
// heuristics, the simulator and the validator, and its refusals.
#include "planner/optimal_milp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "models/spec/device.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/optimal_candidate.h"
#include "planner/optimal_table.h"
#include "schedules/pipeline.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"

namespace pw {
namespace {

ScheduleRequest Request(int P, int m, StageCosts costs = {}, std::optional<double> limit = {}) {
  ScheduleRequest r;
  r.schedule = "optimal";
  r.pp_size = P;
  r.num_microbatches = m;
  r.costs = costs;
  r.memory_limit = limit;
  return r;
}

// Makespan of heuristic `name` on `req` (split 1F1B is not needed: 1F1B's
// own makespan is what users compare with); nullopt if it does not fit.
std::optional<double> Heuristic(const std::string& name, ScheduleRequest req) {
  req.schedule = name;
  req.virtual_stages = 0;
  StatusOr<PipelineResult> run = RunPipeline(req);
  if (!run.ok()) return std::nullopt;
  return run->sim.makespan_s;
}

// The optimum's order through the whole chain (validate, lower, validate
// eager and rendezvous, simulate): its makespan equals the MILP objective.
void CheckSolution(const ScheduleRequest& req, const OptimalResult& res, double* worst_rel) {
  StageCosts costs = req.costs.stages.empty() ? UniformCosts(req.pp_size) : req.costs;
  ASSERT_TRUE(ValidateComputeOrder(res.program).ok());
  StatusOr<PipelineResult> run = SimulateOrder(res.program, costs);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  // Run as soon as possible, the order never takes longer than the MILP's
  // times; at a proven optimum it cannot be shorter either.
  EXPECT_LE(run->sim.makespan_s, res.objective_s * (1 + 1e-9));
  if (res.proven_optimal) {
    const double rel = std::abs(run->sim.makespan_s - res.objective_s) / res.objective_s;
    *worst_rel = std::max(*worst_rel, rel);
    EXPECT_LE(rel, 1e-6) << "simulated " << run->sim.makespan_s << " vs objective " << res.objective_s;
  }
  EXPECT_NEAR(run->sim.makespan_s, res.makespan_s, 1e-9 * res.makespan_s);
  for (int r = 0; r < req.pp_size; ++r) {
    const double peak =
        static_cast<double>(run->sim.per_rank[r].peak_memory_bytes - run->sim.per_rank[r].start_memory_bytes);
    EXPECT_LE(peak, RankMemoryLimit(req, r)) << "rank " << r;
  }
}

// Unit costs, no limit: the makespan is at least (P-1) + 3m (the last rank
// cannot start before P-1 forwards and then has 3m units of work) and at
// least m + 2P (rank 0's m forwards, then the last microbatch's P-1 forwards
// and P-1 input gradients above it, then its own I and W); ZB-H1 reaches
// max of both for m >= P (ZB paper §2.3), so the optimum equals it.
TEST(OptimalMilp, UnitCostsMatchTheZeroBubbleBound) {
  double worst = 0;
  for (int P : {1, 2, 3, 4})
    for (int m : {1, P, 2 * P}) {
      if (P * m > kMaxOptimalStageMicrobatches) continue;
      ScheduleRequest req = Request(P, m);
      StatusOr<OptimalResult> res = SolveOptimalSchedule(req, {});
      ASSERT_TRUE(res.ok()) << res.status().ToString();
      const double closed = std::max(3.0 * m + P - 1, m + 2.0 * P);
      EXPECT_TRUE(res->proven_optimal) << "P=" << P << " m=" << m;
      EXPECT_NEAR(res->makespan_s, closed, 1e-9) << "P=" << P << " m=" << m;
      EXPECT_NEAR(res->bound_s, closed, 1e-6);
      CheckSolution(req, *res, &worst);
      for (const char* h : {"1f1b", "zb-h1", "zb-h2", "zb-auto"})
        if (auto mk = Heuristic(h, req)) {
          EXPECT_LE(res->makespan_s, *mk + 1e-9) << h << " P=" << P << " m=" << m;
        }
      std::printf("unit P=%d m=%d: optimum %.6g (closed form %.6g), %.3f s, %d binaries\n", P, m, res->makespan_s,
                  closed, res->solve_s, res->num_binaries);
    }
  std::printf("worst |simulated - objective| / objective: %.3g\n", worst);
}

// A tight memory limit (P activations per rank, 1F1B's and ZB-H1's peak):
// the optimum is no worse than ZB-H1, and with unit costs and m >= P equal to
// ZB-H1's 3m + P - 1 (the unlimited bound above, which ZB-H1 reaches).
TEST(OptimalMilp, TightMemoryLimitAtMostZBH1) {
  double worst = 0;
  for (int P : {2, 3, 4})
    for (int m : {P, 2 * P}) {
      if (P * m > kMaxOptimalStageMicrobatches) continue;
      ScheduleRequest req = Request(P, m, {}, P * 1.0);
      StatusOr<OptimalResult> res = SolveOptimalSchedule(req, {});
      ASSERT_TRUE(res.ok()) << res.status().ToString();
      CheckSolution(req, *res, &worst);
      std::optional<double> h1 = Heuristic("zb-h1", req);
      ASSERT_TRUE(h1.has_value());
      EXPECT_LE(res->makespan_s, *h1 + 1e-9);
      EXPECT_NEAR(res->makespan_s, 3.0 * m + P - 1, 1e-9);
    }
  std::printf("worst |simulated - objective| / objective: %.3g\n", worst);
}

// A profiled cost (the ZB paper's 1.5B, Table 9: F 18.522, I 18.086, W 9.337,
// message 0.601 ms) under both limits: the optimum is <= every heuristic
// that fits, its bound <= it, its order valid and its simulation equal to
// the objective.
TEST(OptimalMilp, ProfiledCostsNoWorseThanEveryHeuristic) {
  double worst = 0;
  for (int P : {2, 3, 4})
    for (int m : {P, 2 * P})
      for (int limit_factor : {1, 2}) {
        OptimalTableCase tc;
        tc.pp_size = P;
        tc.num_microbatches = m;
        tc.profile = CostProfile::kZbPaper15B;
        tc.limit_activations = limit_factor * P;
        ScheduleRequest req = OptimalTableRequest(tc);
        OptimalOptions opt;
        opt.time_limit_s = 2;
        StatusOr<OptimalResult> res = SolveOptimalSchedule(req, opt);
        ASSERT_TRUE(res.ok()) << res.status().ToString();
        CheckSolution(req, *res, &worst);
        EXPECT_LE(res->bound_s, res->makespan_s);
        EXPECT_LE(res->makespan_s, res->warm_start_makespan_s);
        for (const char* h : {"1f1b", "zb-h1", "zb-h2", "zb-auto"})
          if (auto mk = Heuristic(h, req)) {
            EXPECT_LE(res->makespan_s, *mk * (1 + 1e-12)) << h;
          }
        std::printf("1.5B P=%d m=%d limit %dP: optimum %.4f ms (bound %.4f, %s), warm start %s %.4f ms, %.2f s\n", P, m,
                    limit_factor, res->makespan_s * 1e3, res->bound_s * 1e3,
                    res->proven_optimal ? "proven" : "time limit", res->warm_start_schedule.c_str(),
                    res->warm_start_makespan_s * 1e3, res->solve_s);
      }
  std::printf("worst |simulated - objective| / objective: %.3g\n", worst);
}

// Communication latency enters the precedence rows exactly as the
// simulator's arrivals: unit costs with a 0.5 s message, m = 1: the single
// microbatch's chain 4 F + 3 messages + 4 I + 3 messages + W = 9 + 3 = 12.
TEST(OptimalMilp, CommunicationLatencyOneMicrobatch) {
  const int P = 4;
  ScheduleRequest req = Request(P, 1, UniformCosts(P, {}, {}, CommModel{0.5, 0}));
  StatusOr<OptimalResult> res = SolveOptimalSchedule(req, {});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_NEAR(res->makespan_s, 2.0 * P + 1 + 2 * (P - 1) * 0.5, 1e-9);
  double worst = 0;
  CheckSolution(req, *res, &worst);
}

// `plan --try-optimal`: with 1F1B as the only family, the optimum of its
// split (I/W split, as the planner's costs give) is shorter and is chosen;
// the plan written from it validates and simulates to the optimum.
TEST(OptimalMilp, PlannerTakesTheOptimumWhenShorter) {
  PlannerModel model;
  model.config = *LoadModelConfig("gpt2");
  model.device = *LoadDeviceSpec("A100-40GB");
  PlannerOptions o;
  o.pp_size = 2;
  o.num_microbatches = 4;
  o.micro_batch_size = 1;
  o.seq_length = 1024;
  o.schedules = {"1f1b"};
  o.recompute = Recompute::kNone;
  o.find_min_pp = false;
  StatusOr<SearchResult> res = SearchPlans(model, o);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  const double heuristic = res->candidates[res->chosen].step_s;
  StatusOr<std::string> note = TryOptimalCandidate(&*res, o, {});
  ASSERT_TRUE(note.ok()) << note.status().ToString();
  std::printf("%s\n", note->c_str());
  EXPECT_NE(note->find(": taken"), std::string::npos) << *note;
  const Candidate& c = res->candidates[res->chosen];
  EXPECT_EQ(c.schedule, "optimal");
  EXPECT_LT(c.makespan_s, heuristic);
  StatusOr<Plan> plan = BuildPlan(*res, model, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  Program program = PlanProgram(*plan);
  EXPECT_TRUE(ValidateProgram(program, {}).ok());
  StatusOr<SimResult> sim = Simulate(program, PlanCosts(*plan));
  ASSERT_TRUE(sim.ok());
  EXPECT_NEAR(sim->makespan_s, c.makespan_s, 1e-12);
  // --objective steady is not what the MILP minimises: skipped, unchanged.
  o.objective = Objective::kSteady;
  StatusOr<SearchResult> steady = SearchPlans(model, o);
  ASSERT_TRUE(steady.ok());
  StatusOr<std::string> skipped = TryOptimalCandidate(&*steady, o, {});
  ASSERT_TRUE(skipped.ok());
  EXPECT_NE(skipped->find("skipped"), std::string::npos);
  EXPECT_NE(steady->candidates[steady->chosen].schedule, "optimal");
}

// A case where the optimum beats every heuristic: P = 3, m = 4, F = I = 1,
// W = 2, 0.5 s messages, 3 activations per rank. The optimum is proven, no
// shorter than the bound head + work of the last stage (2 x 1.5 + 4 x 4 =
// 19), and strictly shorter than 1F1B, ZB-H1, ZB-H2 and zb-auto.
TEST(OptimalMilp, BeatsEveryHeuristicWithLongWeightGradients) {
  StageCost cost;
  cost.f = 1;
  cost.i = 1;
  cost.w = 2;
  ScheduleRequest req = Request(3, 4, UniformCosts(3, cost, {}, CommModel{0.5, 0}), 3.0);
  StatusOr<OptimalResult> res = SolveOptimalSchedule(req, {});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_TRUE(res->proven_optimal);
  EXPECT_GE(res->makespan_s, 19 - 1e-9);
  double worst = 0;
  CheckSolution(req, *res, &worst);
  double best_heuristic = 1e300;
  for (const char* h : {"1f1b", "zb-h1", "zb-h2", "zb-auto"})
    if (auto mk = Heuristic(h, req)) best_heuristic = std::min(best_heuristic, *mk);
  EXPECT_LT(res->makespan_s, best_heuristic - 0.5);
  std::printf("W = 2F, 0.5 s messages, limit 3: optimum %.6g s (proven), best heuristic %.6g s\n", res->makespan_s,
              best_heuristic);
}

// A time limit that stops CBC during its root processing (CBC 2.10.8 with
// preprocessing crashed here): the warm start comes back, marked unproven,
// with CBC's bound below it.
TEST(OptimalMilp, ShortTimeLimitKeepsTheWarmStart) {
  OptimalTableCase tc;
  tc.pp_size = 4;
  tc.num_microbatches = 8;
  tc.profile = CostProfile::kZbPaper15B;
  tc.limit_activations = 4;
  ScheduleRequest req = OptimalTableRequest(tc);
  for (double t : {0.01, 0.05, 0.3}) {
    OptimalOptions o;
    o.time_limit_s = t;
    StatusOr<OptimalResult> res = SolveOptimalSchedule(req, o);
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    EXPECT_LE(res->makespan_s, res->warm_start_makespan_s);
    EXPECT_LE(res->bound_s, res->makespan_s);
    double worst = 0;
    CheckSolution(req, *res, &worst);
    std::printf("time limit %.2f s: %.4f ms, bound %.4f ms, %s, %.2f s\n", t, res->makespan_s * 1e3, res->bound_s * 1e3,
                res->proven_optimal ? "proven" : "not proven", res->solve_s);
  }
}

TEST(OptimalMilp, RefusesLargeProblemsAndBadOptionsBeforeWork) {
  StatusOr<OptimalResult> big = SolveOptimalSchedule(Request(4, 9), {});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("above the limit of 32"), std::string::npos) << big.status().message();
  EXPECT_NE(big.status().message().find("--num-microbatches"), std::string::npos);
  for (double t : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    OptimalOptions o;
    o.time_limit_s = t;
    Status st = CheckOptimalRequest(Request(2, 2), o);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << t;
    EXPECT_NE(st.message().find("--time-limit"), std::string::npos) << st.message();
  }
  ScheduleRequest dp = Request(2, 2);
  dp.dp_size = 2;
  EXPECT_NE(CheckOptimalRequest(dp, {}).message().find("data parallelism"), std::string::npos);
  ScheduleRequest v2 = Request(2, 2);
  v2.virtual_stages = 2;
  EXPECT_NE(CheckOptimalRequest(v2, {}).message().find("--virtual-stages"), std::string::npos);
  // Below one activation nothing fits: Infeasible naming the limit.
  StatusOr<OptimalResult> tight = SolveOptimalSchedule(Request(2, 2, {}, 0.5), {});
  ASSERT_FALSE(tight.ok());
  EXPECT_EQ(tight.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(tight.status().message().find("--memory-limit"), std::string::npos) << tight.status().message();
}

}  // namespace
}  // namespace pw
