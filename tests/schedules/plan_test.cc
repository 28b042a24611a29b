// Plan file: deterministic write, exact round trip, errors naming the field.
#include "plan/plan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/file_io.h"
#include "tests/testing/schedule_util.h"

namespace pw::testing {
namespace {

StatusOr<Plan> SamplePlan() {
  StageCost c;
  c.f = 0.010;
  c.i = 0.011;
  c.w = 0.008;
  StageMemory mem;
  mem.static_bytes = 123456789;
  mem.activation = 4200000;
  mem.wstash = 1600000;
  mem.send_forward = mem.send_backward = 262144;
  CommModel comm;
  comm.latency_s = 1e-5;
  comm.bandwidth_bytes_per_s = 2.5e10;
  PW_ASSIGN_OR_RETURN(Pipeline pl, RunPipeline("interleaved-1f1b", 4, 6, 2, UniformCosts(8, c, mem, comm)));
  Plan plan = MakePlan("interleaved-1f1b", pl.lowered, UniformCosts(8, c, mem, comm), pl.sim, 85899345920LL);
  plan.extra["notes"] = {{"origin", "test"}};  // unknown fields are kept
  return plan;
}

TEST(PlanFile, RoundTripIsByteIdentical) {
  auto plan = SamplePlan();
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::string text = PlanToJson(*plan);
  auto back = ParsePlan(text, "p.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(PlanToJson(*back), text);
  // The writer's hand-formatted action lists are exactly nlohmann's dump(2).
  EXPECT_EQ(nlohmann::ordered_json::parse(text).dump(2) + "\n", text);
  Plan empty_rank = *plan;
  empty_rank.ranks.assign(empty_rank.ranks.size(), {});
  const std::string empty_text = PlanToJson(empty_rank);
  EXPECT_EQ(nlohmann::ordered_json::parse(empty_text).dump(2) + "\n", empty_text);
  EXPECT_EQ(PlanHash(*back), PlanHash(*plan));
  EXPECT_EQ(back->ranks, plan->ranks);
  EXPECT_EQ(back->extra["notes"]["origin"], "test");
  EXPECT_FALSE(back->model.has_value()) << "a schedule-only plan has no model section";
  // Required fields in docs/PLAN_FORMAT.md order come first.
  EXPECT_EQ(text.find("\"format\": \"pipewright-plan\""), 4u);
  auto again = SamplePlan();
  EXPECT_EQ(PlanToJson(*again), text) << "same inputs must give the same bytes";
}

TEST(PlanFile, ErrorsNameTheField) {
  auto plan = SamplePlan();
  ASSERT_TRUE(plan.ok());
  nlohmann::json doc = nlohmann::json::parse(PlanToJson(*plan));
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  } cases[] = {
      {[](nlohmann::json& d) { d.erase("pp_size"); }, "p.json: pp_size: field is missing"},
      {[](nlohmann::json& d) { d["ranks"][1]["actions"][3] = "5X0"; }, "p.json: ranks[1].actions[3]: bad action '5X0'"},
      {[](nlohmann::json& d) {
         d["stages"][2]["layers"] = {3, 3};
       },
       "stages[2].layers: a stage may not be empty"},
      {[](nlohmann::json& d) { d["stages"][1]["cost_s"].erase("W"); }, "stages[1].cost_s.W: field is missing"},
      {[](nlohmann::json& d) { d["version"] = 4; },
       "version: this pipewright reads versions 1 to 3, the file is version 4"},
      {[](nlohmann::json& d) { d["dp_size"] = 0; }, "dp_size: must be >= 1"},
      {[](nlohmann::json& d) { d["ranks"][0]["actions"][0] = "1F0"; }, "stage 1 lives on rank 1"},
      // `show` prints the schedule name: an escape sequence would reach the terminal.
      {[](nlohmann::json& d) { d["schedule"] = "\x1b[31mred"; },
       "schedule: holds a control character, got \"\\u001b[31mred\""},
  };
  for (auto& c : cases) {
    nlohmann::json d = doc;
    c.edit(d);
    auto p = ParsePlan(d.dump(), "p.json");
    ASSERT_FALSE(p.ok()) << c.expect;
    EXPECT_NE(p.status().message().find(c.expect), std::string::npos) << p.status().message();
  }
  // A number too large for a double is an error, not an abort.
  auto huge = ParsePlan(R"({"format": "pipewright-plan", "version": 1e400})", "h.json");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("h.json: not valid JSON"), std::string::npos) << huge.status().message();
  std::string text = PlanToJson(*plan);
  auto truncated = ParsePlan(text.substr(0, text.size() / 2), "t.json");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("t.json: not valid JSON"), std::string::npos);
}

TEST(PlanFile, AtomicWriteLeavesNothingOnFailure) {
  Status st = WriteFileAtomic("/nonexistent-dir/plan.json", "{}");
  EXPECT_FALSE(st.ok());
  const std::string path = ::testing::TempDir() + "/pw_plan_atomic.json";
  PW_ASSERT_OK(WriteFileAtomic(path, "first\n"));
  PW_ASSERT_OK(WriteFileAtomic(path, "second\n"));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "second\n");
}

TEST(PlanFile, PredictedMatchesTheSimulatorForTheWrittenCosts) {
  auto plan = SamplePlan();
  ASSERT_TRUE(plan.ok());
  auto sim = Simulate(PlanProgram(*plan), PlanCosts(*plan));
  ASSERT_TRUE(sim.ok());
  EXPECT_DOUBLE_EQ(sim->makespan_s, plan->predicted.makespan_s);
  EXPECT_EQ(sim->per_rank[0].peak_memory_bytes, plan->predicted.per_rank[0].peak_memory_bytes);
  // Messages of 262144 B at 25 GB/s + 10 us cost time: the makespan is
  // above the comm-free one.
  auto free = Simulate(PlanProgram(*plan), [&] {
    StageCosts c = PlanCosts(*plan);
    c.comm = CommModel{};
    return c;
  }());
  ASSERT_TRUE(free.ok());
  EXPECT_GT(sim->makespan_s, free->makespan_s);
}

}  // namespace
}  // namespace pw::testing
