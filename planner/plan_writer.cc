// The plan file of the chosen candidate (planner.h BuildPlan): the lowered
// program, costs and simulation of the candidate, its layer split, the typed
// model, layers and training sections, and the informational candidate table.
#include "planner/explain.h"
#include "planner/planner.h"

namespace pw {

StatusOr<Plan> BuildPlan(const SearchResult& r, const PlannerModel& model, const PlannerOptions& o) {
  if (r.chosen < 0 || !r.candidates[r.chosen].artifacts)
    return Status::InvalidArgument("no feasible candidate to write a plan for");
  const Candidate& c = r.candidates[r.chosen];
  const CandidateArtifacts& a = *c.artifacts;
  Plan plan = MakePlan(c.schedule, a.lowered, a.costs, a.sim, r.memory_limit_bytes);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    plan.stages[s].layer_begin = c.boundaries[s];
    plan.stages[s].layer_end = c.boundaries[s + 1];
  }
  // The model section: the config planned for, or the HF config a
  // layer-cost file names when its layer list is that model's.
  std::optional<ModelConfig> planned = model.config;
  if (!planned && a.table.model.is_object()) {
    auto from_table = ParseModelConfig(a.table.model, "layer-cost file: model");
    if (from_table.ok() && from_table->num_layers + 2 == static_cast<int>(a.table.layers.size())) planned = *from_table;
  }
  if (planned) {
    plan.model = *planned;
    plan.model->raw = nlohmann::json();
    plan.layers = PlanLayers(*plan.model);
  }
  const int64_t seq = o.seq_length > 0
                          ? o.seq_length
                          : (model.config && !model.profile ? model.config->max_positions : a.table.seq_length);
  PlanTraining t;
  t.micro_batch_size = c.batch.micro_batch_size;
  t.seq_length = seq;
  t.global_batch_size = c.batch.global_batch_size;
  t.microbatch_sizes = c.batch.microbatch_sizes;
  PW_ASSIGN_OR_RETURN(t.recompute, ParseRecompute(c.recompute));
  t.precision = o.precision;
  t.global_barrier = o.clip_grad_norm > 0;
  t.clip_grad_norm = o.clip_grad_norm;
  t.distributed_optimizer = o.distributed_optimizer && o.dp_size > 1;
  plan.training = t;
  plan.tp_size = o.tp_size;
  plan.sequence_parallel = SequenceParallelOn(o);
  nlohmann::json planner = CandidatesToJson(r);
  if (model.device) plan.device = *model.device;
  std::vector<int64_t> transient;
  for (size_t k = 0; k < c.peak_bytes.size(); ++k)
    transient.push_back(c.peak_bytes[k] - a.sim.per_rank[k].peak_memory_bytes);
  planner["recompute_workspace_bytes_per_rank"] = transient;
  plan.planner = planner;
  return plan;
}

}  // namespace pw
