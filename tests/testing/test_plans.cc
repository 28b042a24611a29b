#include "tests/testing/test_plans.h"

#include <numeric>

#include "models/spec/device.h"
#include "planner/planner.h"
#include "schedules/registry.h"

namespace pw::exec {

DeviceSpec TestCpuDevice() {
  DeviceSpec d;
  d.name = "test-cpu";
  d.memory_bytes = int64_t{4} << 30;
  d.peak_flops = 96e9;
  d.efficiency = 0.05;
  d.memory_bandwidth_bytes_per_s = 1e10;
  d.p2p_bandwidth_bytes_per_s = 5e9;
  d.p2p_latency_s = 2e-5;
  d.source = "fixed numbers for the executor's test plans (tests/testing/test_plans.h)";
  return d;
}

StatusOr<Plan> BuildPlan(const PlanSpec& spec) {
  if (spec.dp_size < 1) return Status::InvalidArgument("PlanSpec.dp_size must be >= 1");
  nlohmann::json config = spec.model;
  if (!config.is_object()) return Status::InvalidArgument("PlanSpec.model: expected a HF config object");
  if (!config.contains("model_type")) config["model_type"] = "gpt2";
  if (!config.contains("vocab_size")) config["vocab_size"] = 256;
  if (!config.contains("tie_word_embeddings")) config["tie_word_embeddings"] = false;
  for (const char* p : {"attn_pdrop", "resid_pdrop", "embd_pdrop"})
    if (!config.contains(p)) config[p] = 0.0;
  PlannerModel model;
  PW_ASSIGN_OR_RETURN(model.config, ParseModelConfig(config, "PlanSpec.model"));
  model.device = TestCpuDevice();
  // A tensor-parallel group shares one node (the planner refuses T above
  // gpus_per_node on a device that is not a CPU core): the test device's
  // node holds the group (only for TP plans, so the others do not move).
  if (spec.tp_size > 1) model.device->gpus_per_node = spec.tp_size;

  PW_ASSIGN_OR_RETURN(ScheduleInfo info, FindSchedule(spec.schedule));
  PlannerOptions o;
  o.pp_size = spec.pp_size;
  o.schedules = {info.name};
  o.virtual_stages = spec.virtual_stages > 0 ? spec.virtual_stages : info.default_virtual_stages;
  o.num_microbatches = spec.num_microbatches;
  if (spec.microbatch_sizes.empty()) {
    o.micro_batch_size = spec.micro_batch_size;
  } else {
    o.global_batch_size = std::accumulate(spec.microbatch_sizes.begin(), spec.microbatch_sizes.end(), int64_t{0});
  }
  o.seq_length = spec.seq_length;
  o.recompute = Recompute::kNone;
  o.precision = spec.bytes_per_element == 8 ? Precision::kFp64 : Precision::kFp32;
  o.clip_grad_norm = spec.clip_grad_norm;
  o.layers_per_stage = spec.layers_per_stage;
  o.find_min_pp = false;
  o.dp_size = spec.dp_size;
  o.distributed_optimizer = spec.distributed_optimizer;
  o.tp_size = spec.tp_size;
  o.sequence_parallel = spec.sequence_parallel;
  if (!spec.microbatch_sizes.empty()) *o.global_batch_size *= spec.dp_size;
  PW_ASSIGN_OR_RETURN(SearchResult result, SearchPlans(model, o));
  PW_ASSIGN_OR_RETURN(Plan plan, BuildPlan(result, model, o));
  if (!spec.microbatch_sizes.empty()) {
    const std::vector<int64_t> want(spec.microbatch_sizes.begin(), spec.microbatch_sizes.end());
    if (plan.training->microbatch_sizes != want)
      return Status::InvalidArgument(
          "PlanSpec.microbatch_sizes: the planner splits a batch as evenly as possible, "
          "larger first; these sizes are not such a split of their sum");
  }
  return plan;
}

}  // namespace pw::exec
