// Plan files of earlier versions: a version-1 file reads as the version-2
// plan the current writer makes; an unknown version is refused, naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "models/spec/device.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/planner.h"

namespace pw {
namespace {

// A version-1 file (HF config under "model", layer names, untyped training,
// no dp_size), as the previous writers wrote it, reads as the same plan.
TEST(PlanVersions, Version1FilesAreReadAndConverted) {
  PlannerModel m;
  m.config = *LoadModelConfig("gpt2");
  m.device = *LoadDeviceSpec("A100-40GB");
  PlannerOptions o;
  o.pp_size = 2;
  o.global_batch_size = 8;
  o.micro_batch_size = 2;
  o.schedules = {"1f1b"};
  o.find_min_pp = false;
  auto r = SearchPlans(m, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto plan = BuildPlan(*r, m, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  nlohmann::json v1 = nlohmann::json::parse(PlanToJson(*plan));
  v1["version"] = 1;
  v1.erase("dp_size");
  v1["model"] = m.config->raw;
  nlohmann::json names = nlohmann::json::array();
  for (const PlanLayer& l : plan->layers) names.push_back(l.name);
  v1["layers"] = names;
  v1["training"] = {{"micro_batch_size", 2},
                    {"seq_length", plan->training->seq_length},
                    {"global_batch_size", 8},
                    {"microbatch_sizes", {2, 2, 2, 2}},
                    {"recompute", RecomputeName(plan->training->recompute)},
                    {"dtype", "bf16"},
                    {"optimizer", "adamw"},
                    {"global_barrier", false},
                    {"clip_grad_norm", 0.0}};
  auto back = ParsePlan(v1.dump(), "v1.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  back->model->name = plan->model->name;  // v1 named the model by its _name_or_path or family
  EXPECT_EQ(PlanToJson(*back), PlanToJson(*plan)) << "version 1 converts to the same version-2 plan";
  // An edited model section (issue #25: a 256-wide model against costs
  // planned for 128 was converted and trained): the stages' message sizes
  // were written from the model, so a wider model is refused, naming both.
  nlohmann::json wide = v1;
  wide["model"]["n_embd"] = 1536;
  back = ParsePlan(wide.dump(), "wide.json");
  ASSERT_FALSE(back.ok()) << "a version-1 plan whose model was widened was converted";
  EXPECT_NE(back.status().message().find("wide.json: model: the version-1 plan's stages[0].memory_bytes.send_forward "
                                         "is 3145728 bytes, but its model section gives"),
            std::string::npos)
      << back.status().message();
  EXPECT_NE(back.status().message().find("= 6291456: the model section was edited"), std::string::npos)
      << back.status().message();
  // pw_make_plan's version-1 plans: no dtype, dtype_bytes 8, no vocab_size.
  v1["training"].erase("dtype");
  v1["training"]["dtype_bytes"] = 8;
  // (their message sizes were written with 8-byte elements: 4x the bf16 plan's)
  for (auto& st : v1["stages"])
    for (const char* f : {"send_forward", "send_backward"})
      if (st["memory_bytes"][f].get<int64_t>() > 4) st["memory_bytes"][f] = st["memory_bytes"][f].get<int64_t>() * 4;
  back = ParsePlan(v1.dump(), "v1.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->training->precision, Precision::kFp64);
  v1["version"] = 7;
  back = ParsePlan(v1.dump(), "v7.json");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(
      back.status().message().find("v7.json: version: this pipewright reads versions 1 to 3, the file is version 7"),
      std::string::npos)
      << back.status().message();
}

}  // namespace
}  // namespace pw
