// The plan file (shared/design/PLAN_FORMAT.md, version 1): the contract
// between planner, visualiser, validator and executor. Read and written only
// here. Output is deterministic: the same Plan gives byte-identical text
// (fixed key order, shortest round-trip float formatting by nlohmann-json).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/costs.h"
#include "schedules/program.h"
#include "schedules/simulate.h"
#include "base/status.h"

namespace pw {

inline constexpr const char* kPlanFormat = "pipewright-plan";
inline constexpr int kPlanVersion = 1;

struct PlanStage {
  int index = 0;
  int rank = 0;
  int layer_begin = 0;  // half-open [layer_begin, layer_end) into the model's layer list
  int layer_end = 0;
  StageCost cost;       // seconds per microbatch ("B" written only if cost.b >= 0)
  StageMemory memory;   // bytes
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

struct Plan {
  std::string schedule;  // canonical name, or "custom" for imported orders
  int pp_size = 0;
  int num_stages = 0;
  int num_microbatches = 0;
  std::vector<int> stage_to_rank;
  std::vector<PlanStage> stages;
  CommModel comm;
  std::optional<int64_t> memory_limit_bytes;  // null = unlimited
  std::vector<std::vector<Action>> ranks;     // lowered per-rank streams
  PlanPrediction predicted;
  // Every other top-level field, kept as read and written back in key order.
  // Known ones: "model" (HF config.json object the executor builds from),
  // "layers" (names of the model's layer list), "training" (micro_batch_size,
  // seq_length, microbatch_sizes, ...), "planner" (objective, candidates).
  nlohmann::json extra = nlohmann::json::object();
};

// The schedule part of a plan as a Program.
Program PlanProgram(const Plan& plan);
// The per-stage costs, memory and comm model of a plan, for Simulate().
StageCosts PlanCosts(const Plan& plan);

// Builds a plan from a lowered program, its costs and its simulation; stage
// layer ranges default to [s, s+1) until the planner sets them.
Plan MakePlan(const std::string& schedule, const Program& lowered, const StageCosts& costs,
              const SimResult& sim, std::optional<int64_t> memory_limit_bytes);

// Parses plan JSON text. `source` names the file in errors. Errors
// (InvalidArgument) name the field, e.g. "plan.json: ranks[1].actions[4]:
// bad action '5X0' ..." or "plan.json: field 'pp_size' is missing"; the
// schedule part is checked for shape (CheckProgramShape) but not validated.
StatusOr<Plan> ParsePlan(const std::string& text, const std::string& source = "plan");
// Reads and parses a plan file. NotFound if it cannot be opened.
StatusOr<Plan> ReadPlanFile(const std::string& path);
// Deterministic JSON text of `plan` (2-space indent, trailing newline).
std::string PlanToJson(const Plan& plan);
// Writes `text` to `path` atomically: a temp file in the same directory, then
// rename(2). On error nothing is left at `path` that was not there before.
Status WriteFileAtomic(const std::string& path, const std::string& text);
// 64-bit FNV-1a of PlanToJson(plan), as 16 hex digits: ranks compare it at
// start-up and refuse to run on a mismatch.
std::string PlanHash(const Plan& plan);

}  // namespace pw
