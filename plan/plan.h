// The plan file (docs/PLAN_FORMAT.md, version 3): the contract between
// planner, visualiser, validator and executor. One typed Plan, read and
// written only by this module (plan_json.cc). Output is deterministic: the
// same Plan gives byte-identical text (fixed key order, shortest round-trip
// float formatting by nlohmann-json).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/costs.h"
#include "base/status.h"
#include "models/spec/device.h"
#include "models/spec/footprint.h"
#include "models/spec/model_config.h"
#include "schedules/program.h"
#include "schedules/simulate.h"

namespace pw {

inline constexpr const char* kPlanFormat = "pipewright-plan";
// The version this build writes (3: tensor parallelism); it reads this one,
// version 2 (tp_size 1) and version 1 (converted on read, plan_json.cc).
inline constexpr int kPlanVersion = 3;

struct PlanStage {
  int index = 0;
  int rank = 0;
  int layer_begin = 0;  // half-open [layer_begin, layer_end) into the model's layer list
  int layer_end = 0;
  StageCost cost;      // seconds per microbatch ("B" written only if cost.b >= 0)
  StageMemory memory;  // bytes
};

struct PlanRankPrediction {
  int rank = 0;
  double busy_s = 0.0;
  int64_t peak_memory_bytes = 0;
};

struct PlanPrediction {
  double makespan_s = 0.0;
  double steady_step_s = 0.0;
  double bubble_ratio = 0.0;
  std::vector<PlanRankPrediction> per_rank;
};

// One entry of the model's layer list (models/spec/footprint.h): index 0 the
// embedding, 1..L the blocks, L+1 the head. Stage layer ranges index it.
struct PlanLayer {
  std::string name;  // "embedding", "block.7", "head"
  LayerKind kind = LayerKind::kBlock;
  int64_t params = 0;  // parameters the layer owns (tied head: counted in the embedding)
};

// What one training step computes (per pipeline replica).
struct PlanTraining {
  int64_t micro_batch_size = 1;           // b: sequences in the largest microbatch
  int64_t seq_length = 0;                 // s: tokens per sequence
  int64_t global_batch_size = 0;          // sequences per step over all replicas = dp_size x sum of microbatch_sizes
  std::vector<int64_t> microbatch_sizes;  // sequences of each microbatch, size m
  Recompute recompute = Recompute::kNone;
  Precision precision = Precision::kFp32;  // written as "dtype": "bf16" | "fp32" | "fp64"
  std::string optimizer = "adamw";
  // A global barrier (clipping by the global gradient norm) ends each step:
  // the step time is makespan_s, not steady_step_s (PLAN_FORMAT rule 9).
  bool global_barrier = false;
  double clip_grad_norm = 0.0;  // 0 = no clipping
  // ZeRO-1 (--use-distributed-optimizer): AdamW state sharded over the
  // dp_size data-parallel ranks. Written always; absent on read = false.
  bool distributed_optimizer = false;
};

struct Plan {
  std::string schedule;  // canonical name, or "custom" for imported orders
  int pp_size = 0;
  // Data-parallel replicas of the whole pipeline (world size = pp_size *
  // dp_size * tp_size; with tp_size 1 global rank = pp_rank * dp_size + dp_rank). With dp_size > 1
  // every stage's stream holds its REDUCE_GRAD (PLAN_FORMAT rule 10).
  int dp_size = 1;
  // Tensor-parallel ranks sharing each stage (Megatron's TP; version 3,
  // absent in versions 1-2 = 1). World size = pp_size * dp_size * tp_size;
  // global rank g = pp_rank * dp_size * tp_size + dp_rank * tp_size +
  // tp_rank (TP innermost, Megatron's default order). Stage costs and bytes
  // are per TP rank and include the TP collectives.
  int tp_size = 1;
  // --sequence-parallel (Korthikanti et al. 2022): only with tp_size > 1.
  bool sequence_parallel = false;
  int num_stages = 0;
  int num_microbatches = 0;
  std::vector<int> stage_to_rank;
  std::vector<PlanStage> stages;
  CommModel comm;
  std::optional<int64_t> memory_limit_bytes;  // null = unlimited
  std::vector<std::vector<Action>> ranks;     // lowered per-rank streams
  PlanPrediction predicted;
  // The model, its layer list and the training shape: absent in
  // schedule-only plans (`pipewright schedule --format json`), required by
  // the executor. `model->raw` is not written (the plan holds the normalised
  // fields).
  std::optional<ModelConfig> model;
  std::vector<PlanLayer> layers;
  std::optional<PlanTraining> training;
  // The device the costs and the memory limit came from (models/spec
  // device.h; its peak_flops is the denominator of the executor's MFU).
  // Absent for schedule-only plans and plans made from a layer-cost or
  // profile file without --device.
  std::optional<DeviceSpec> device;
  // Informational, for people and tools (objective, device, candidate table):
  // written as "planner", never read by the executor. Null = absent.
  nlohmann::json planner;
  // Every other top-level field, kept as read and written back in key order.
  nlohmann::json extra = nlohmann::json::object();
};

// The schedule part of a plan as a Program.
Program PlanProgram(const Plan& plan);
// The per-stage costs, memory and comm model of a plan, for Simulate().
StageCosts PlanCosts(const Plan& plan);

// Builds a plan from a lowered program, its costs and its simulation; stage
// layer ranges default to [s, s+1) until the planner sets them.
Plan MakePlan(const std::string& schedule, const Program& lowered, const StageCosts& costs, const SimResult& sim,
              std::optional<int64_t> memory_limit_bytes);

// The layer list of `model` as plan entries (models/spec BuildLayerList).
std::vector<PlanLayer> PlanLayers(const ModelConfig& model);

// Parses plan JSON text, version 3, 2 (tp_size 1) or 1 (a version-1 file's HF config
// "model", name-only "layers" and untyped "training" are converted). `source`
// names the file in errors. Errors (InvalidArgument) name the field, e.g.
// "plan.json: ranks[1].actions[4]: bad action '5X0' ...", "plan.json:
// pp_size: field is missing", "plan.json: version: this pipewright reads
// versions 1 to 3, the file is 4"; the schedule part is checked for shape
// (CheckProgramShape) but not validated; model, layers and stages must agree
// (layer count, last stage ending at the last layer).
StatusOr<Plan> ParsePlan(const std::string& text, const std::string& source = "plan");
// Reads and parses a plan file. NotFound if it cannot be opened.
StatusOr<Plan> ReadPlanFile(const std::string& path);
// Deterministic JSON text of `plan` (2-space indent, trailing newline).
std::string PlanToJson(const Plan& plan);
// 64-bit FNV-1a of PlanToJson(plan), as 16 hex digits: ranks compare it at
// start-up and refuse to run on a mismatch.
std::string PlanHash(const Plan& plan);

}  // namespace pw
