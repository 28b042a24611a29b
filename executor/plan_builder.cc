#include "executor/plan_builder.h"

#include <numeric>

#include "schedules/lower.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"
#include "schedules/validate.h"

namespace pw::exec {

namespace {

// Rough CPU throughput used only to turn FLOPs into plan seconds.
constexpr double kAssumedFlopsPerSecond = 5e9;

}  // namespace

StatusOr<Plan> BuildPlan(const PlanSpec& spec) {
  PW_ASSIGN_OR_RETURN(models::GptConfig cfg, models::ParseGptConfig(spec.model));
  PW_ASSIGN_OR_RETURN(ScheduleInfo info, FindSchedule(spec.schedule));
  const int v = spec.virtual_stages > 0 ? spec.virtual_stages : info.default_virtual_stages;
  const int S = spec.pp_size * v, L = cfg.NumLayers(), m = spec.num_microbatches;
  if (spec.seq_length > cfg.n_positions)
    return Status::InvalidArgument("seq_length " + std::to_string(spec.seq_length) + " exceeds n_positions " +
                                   std::to_string(cfg.n_positions));
  std::vector<int> sizes = spec.microbatch_sizes;
  if (sizes.empty()) sizes.assign(static_cast<size_t>(m), spec.micro_batch_size);
  if (static_cast<int>(sizes.size()) != m)
    return Status::InvalidArgument("microbatch_sizes has " + std::to_string(sizes.size()) + " entries, need m=" +
                                   std::to_string(m));
  std::vector<int> per_stage = spec.layers_per_stage;
  if (per_stage.empty()) {
    if (L < S)
      return Status::InvalidArgument("model has " + std::to_string(L) + " layers, fewer than " + std::to_string(S) +
                                     " stages");
    for (int s = 0; s < S; ++s) per_stage.push_back(L / S + (s < L % S ? 1 : 0));
  }
  if (static_cast<int>(per_stage.size()) != S ||
      std::accumulate(per_stage.begin(), per_stage.end(), 0) != L ||
      *std::min_element(per_stage.begin(), per_stage.end()) < 1)
    return Status::InvalidArgument("layers_per_stage must hold " + std::to_string(S) + " counts >= 1 summing to " +
                                   std::to_string(L));

  // Per-stage costs and memory for a microbatch of micro_batch_size rows.
  const int64_t rows = *std::max_element(sizes.begin(), sizes.end()), T = spec.seq_length;
  const int64_t message = rows * T * cfg.n_embd * spec.bytes_per_element;
  StageCosts costs;
  int first = 0;
  for (int s = 0; s < S; ++s) {
    StageCost c{0.0, 0.0, 0.0, -1.0};
    StageMemory mem;
    mem.activation = 0;
    mem.wstash = 0;
    for (int l = first; l < first + per_stage[s]; ++l) {
      const double fwd = models::LayerForwardFlops(cfg, l, rows, T);
      const double wgemm = models::LayerWeightGemmFlops(cfg, l, rows, T);
      c.f += fwd / kAssumedFlopsPerSecond;
      c.i += (2.0 * fwd - wgemm) / kAssumedFlopsPerSecond;
      c.w += wgemm / kAssumedFlopsPerSecond;
      const int64_t stash = models::WeightStashBytes(cfg, l, rows, T, spec.bytes_per_element);
      mem.wstash += stash;
      // Activation estimate (ours): ~ 2x the stash of the layer, plus the
      // attention probabilities (b, H, T, T) of a block.
      mem.activation += 2 * stash;
      if (l > 0 && l < L - 1) mem.activation += rows * cfg.n_head * T * T * spec.bytes_per_element;
    }
    mem.send_forward = s + 1 < S ? message : 0;
    mem.send_backward = s > 0 ? message : 0;
    costs.stages.push_back(c);
    costs.memory.push_back(mem);
    first += per_stage[s];
  }
  costs.comm.latency_s = 2e-5;
  costs.comm.bandwidth_bytes_per_s = 2e9;

  ScheduleRequest req;
  req.schedule = info.name;
  req.pp_size = spec.pp_size;
  req.num_microbatches = m;
  req.virtual_stages = v;
  req.costs = costs;
  auto ctx = [&](const Status& st) {
    return st.WithContext("schedule " + info.name + " (P=" + std::to_string(spec.pp_size) + ", m=" +
                          std::to_string(m) + ", v=" + std::to_string(v) + ")");
  };
  StatusOr<Program> compute = GenerateSchedule(req);
  if (!compute.ok()) return ctx(compute.status());
  StatusOr<Program> lowered = AddSendRecv(*compute, costs);
  if (!lowered.ok()) return ctx(lowered.status());
  Status valid = ValidateProgram(*lowered);
  if (!valid.ok()) return ctx(valid);
  StatusOr<SimResult> sim = Simulate(*lowered, costs);
  if (!sim.ok()) return ctx(sim.status());

  Plan plan = MakePlan(info.name, *lowered, costs, *sim, std::nullopt);
  first = 0;
  for (int s = 0; s < S; ++s) {
    plan.stages[s].layer_begin = first;
    plan.stages[s].layer_end = first + per_stage[s];
    first += per_stage[s];
  }
  plan.extra["model"] = spec.model;
  plan.extra["layers"] = models::GptLayerNames(cfg);
  int batch = std::accumulate(sizes.begin(), sizes.end(), 0);
  plan.extra["training"] = {{"micro_batch_size", rows},
                            {"seq_length", spec.seq_length},
                            {"global_batch_size", batch},
                            {"microbatch_sizes", sizes},
                            {"dtype_bytes", spec.bytes_per_element},
                            {"global_barrier", spec.clip_grad_norm > 0},
                            {"clip_grad_norm", spec.clip_grad_norm}};
  return plan;
}

StatusOr<TrainingShape> ReadTrainingShape(const Plan& plan) {
  auto it = plan.extra.find("training");
  if (it == plan.extra.end() || !it->is_object())
    return Status::InvalidArgument("plan field 'training' (extra) is missing: the executor needs seq_length and "
                                   "microbatch sizes");
  const nlohmann::json& t = *it;
  TrainingShape shape;
  if (!t.contains("seq_length") || !t["seq_length"].is_number_integer() || t["seq_length"].get<int>() < 1)
    return Status::InvalidArgument("plan field 'training.seq_length' is missing or not a positive integer");
  shape.seq_length = t["seq_length"].get<int>();
  const int m = plan.num_microbatches;
  if (t.contains("microbatch_sizes")) {
    if (!t["microbatch_sizes"].is_array())
      return Status::InvalidArgument("plan field 'training.microbatch_sizes' must be an array");
    for (const auto& x : t["microbatch_sizes"]) {
      if (!x.is_number_integer() || x.get<int>() < 1)
        return Status::InvalidArgument("plan field 'training.microbatch_sizes' must hold integers >= 1");
      shape.microbatch_sizes.push_back(x.get<int>());
    }
  } else if (t.contains("micro_batch_size") && t["micro_batch_size"].is_number_integer() &&
             t["micro_batch_size"].get<int>() >= 1) {
    shape.microbatch_sizes.assign(static_cast<size_t>(m), t["micro_batch_size"].get<int>());
  } else {
    return Status::InvalidArgument("plan field 'training.microbatch_sizes' (or 'micro_batch_size') is missing");
  }
  if (static_cast<int>(shape.microbatch_sizes.size()) != m)
    return Status::InvalidArgument("plan field 'training.microbatch_sizes' has " +
                                   std::to_string(shape.microbatch_sizes.size()) + " entries, num_microbatches is " +
                                   std::to_string(m));
  for (int rows : shape.microbatch_sizes) {
    shape.row_offsets.push_back(shape.batch_rows);
    shape.batch_rows += rows;
  }
  return shape;
}

}  // namespace pw::exec
