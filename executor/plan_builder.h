// Builds an executable plan for a GPT config straight from the schedules API
// (GenerateSchedule -> AddSendRecv -> Simulate -> MakePlan), with layer
// ranges, costs and memory derived from the model shape, and the
// extra["model"] / extra["training"] fields the executor reads.
// Used by the executor tests and `pw_make_plan` (launch/demo.sh) until the
// planner writes these plans. Torch-free.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/torch/gpt_config.h"
#include "plan/plan.h"
#include "base/status.h"

namespace pw::exec {

struct PlanSpec {
  std::string schedule = "1f1b";  // canonical schedule name
  int pp_size = 2;                // P
  int num_microbatches = 4;       // m
  int virtual_stages = 0;         // v; 0 = the family default
  nlohmann::json model;           // HF config object (gpt_config.h keys)
  int seq_length = 16;            // T
  // Rows of each microbatch (size m). Empty = micro_batch_size for each.
  std::vector<int> microbatch_sizes;
  int micro_batch_size = 1;
  // Layers per stage (size S, sum N+2, each >= 1). Empty = as even as
  // possible, earlier stages taking the remainder.
  std::vector<int> layers_per_stage;
  int bytes_per_element = 4;      // activation dtype size (4 = float32, 8 = float64)
  // > 0: the run clips by the global gradient norm; recorded as
  // training.clip_grad_norm with training.global_barrier = true.
  double clip_grad_norm = 0.0;
};

// Errors: InvalidArgument naming the field (model config, layers_per_stage
// sum, fewer layers than stages, microbatch_sizes length); the schedule
// registry's and lowering's own errors (e.g. Internal for a generator that is
// not built yet), with the schedule named.
StatusOr<Plan> BuildPlan(const PlanSpec& spec);

// Training fields of a plan (extra["training"]), checked.
struct TrainingShape {
  int seq_length = 0;
  std::vector<int> microbatch_sizes;  // rows per microbatch, size m
  int batch_rows = 0;                 // sum of microbatch_sizes
  std::vector<int> row_offsets;       // first row of each microbatch
};

// Reads extra["training"]: seq_length, and microbatch_sizes (or
// micro_batch_size repeated m times). Errors: InvalidArgument naming the field.
StatusOr<TrainingShape> ReadTrainingShape(const Plan& plan);

}  // namespace pw::exec
