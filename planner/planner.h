// The planner's search: "this model, these devices, this batch" -> ranked
// candidates (schedule family x v x micro-batch size/m x recompute) -> the
// best plan. Every candidate goes through the schedules core: partition
// (partition.h), generate (registry.h), validate and lower (validate.h,
// lower.h), simulate (simulate.h). Candidates whose predicted per-rank peak
// exceeds the memory limit are rejected, and every rejection keeps its reason
// with the numbers.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/spec/device.h"
#include "models/spec/footprint.h"
#include "models/spec/layer_costs.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/cost_model.h"
#include "planner/profile_fit.h"
#include "schedules/program.h"
#include "schedules/simulate.h"

namespace pw {

// Which step time the planner minimises (docs/PLAN_FORMAT.md rules 8-9).
enum class Objective {
  kMakespan,  // `makespan_s`: a global optimizer barrier ends each step (e.g. global grad-norm clipping)
  kSteady,    // `steady_step_s`: no barrier; consecutive steps overlap (ZB paper "post-validation", §4)
};
// "makespan_s" or "steady_step_s".
const char* ObjectiveField(Objective o);
// Parses "makespan" | "steady". InvalidArgument names --objective.
StatusOr<Objective> ParseObjective(const std::string& text);

// The user's request. Flag names in errors are the CLI's (Megatron style).
struct PlannerOptions {
  int pp_size = 0;  // --pipeline-model-parallel-size / --pp (P)
  // --data-parallel-size / --dp (D): replicas of the pipeline; world size
  // P x D. The batch flags then count the global batch over all replicas
  // (global = D x micro-batch x m, Megatron's rule).
  int dp_size = 1;
  // --use-distributed-optimizer: ZeRO-1 (AdamW state sharded over the D
  // replicas; reduce-scatter + all-gather instead of all-reduce).
  bool distributed_optimizer = false;
  // --tensor-model-parallel-size / --tp (T): ranks sharing every layer of a
  // stage (Megatron TP, Shoeybi et al. 2019); world size T x P x D. Costs
  // and bytes are per TP rank (models/spec/footprint.h). T > 1 needs a HF
  // model config (a layer-cost file or profile costs one device).
  int tp_size = 1;
  // --sequence-parallel / --no-sequence-parallel (Korthikanti et al. 2022);
  // unset = on when T > 1 (SequenceParallelOn).
  std::optional<bool> sequence_parallel;
  // --num-devices only: search every T (T <= gpus_per_node, dividing heads,
  // kv heads and the MLP width) instead of the fixed tp_size (--tp given).
  bool search_tensor_parallel = false;
  // --num-devices only: search ZeRO-1 on and off for every split with D >= 2
  // (--use-distributed-optimizer given: on only).
  bool search_distributed_optimizer = false;
  // Branch and bound: a candidate whose step lower bound
  // (CandidateSearch::LowerBound) exceeds the best step found so far, or
  // step_cutoff_s, is not simulated (RejectKind::kBound); in
  // SearchDeviceSplits also whole splits (DeviceSplit::lower_bound_s). The
  // chosen plan is the one the full search chooses, but the other splits'
  // rows then show only what beats it. Off by default (every candidate
  // simulated); `pipewright plan --num-devices` turns it on.
  bool prune_by_bound = false;
  double step_cutoff_s = std::numeric_limits<double>::infinity();
  std::optional<int> num_microbatches;       // --num-microbatches (m)
  std::optional<int64_t> micro_batch_size;   // --micro-batch-size (b); unset = try 1, 2, 4, 8
  std::optional<int64_t> global_batch_size;  // --global-batch-size (sequences per step)
  int64_t seq_length = 0;                    // --seq-length; 0 = the model's max_position_embeddings
  std::optional<int> virtual_stages;         // --num-virtual-stages-per-pipeline-rank; unset = search
  int max_virtual_stages = 4;                // search bound on v
  std::vector<std::string> schedules;        // --schedule NAME; empty (auto) = ScheduleNames()
  std::optional<Recompute> recompute;        // --recompute-granularity; unset = try none, selective, full
  // --memory-limit: the per-rank limit itself. Unset = the device's capacity
  // less its runtime reserve (DeviceSpec::UsableBytes); no device = unlimited.
  std::optional<int64_t> memory_limit_bytes;
  // --memory-reserve: bytes kept free for the runtime instead of the device
  // file's runtime_reserve (limit = capacity - this). Needs a device; not
  // with --memory-limit.
  std::optional<int64_t> memory_reserve_bytes;
  std::optional<int> first_stage_num_layers;  // --first-stage-num-layers
  std::optional<int> last_stage_num_layers;   // --last-stage-num-layers
  // --layers-per-stage: the split itself, one count per global stage (P * v
  // entries, each >= 1, summing to the layer count); empty = the partitioner
  // chooses. A candidate whose P * v differs is rejected (RejectKind::kRequest).
  std::vector<int> layers_per_stage;
  Objective objective = Objective::kMakespan;  // --objective
  // --clip-grad-norm: > 0 = the run clips by the global gradient norm, a
  // global barrier at the end of each step; the plan records it
  // (training.global_barrier, training.clip_grad_norm) and the search must
  // minimise makespan_s (SearchPlans refuses kSteady). 0 = no clipping.
  double clip_grad_norm = 0.0;
  Precision precision = Precision::kMixedBf16;  // --dtype
  // When no candidate fits: search for the smallest P that fits (with full
  // recompute) and name it in the error. When one fits: also report the
  // smallest feasible P and why P - 1 fails (SearchResult::min_pp).
  bool find_min_pp = true;
  // Existence only (FindSmallestPipeline): EvaluateCandidates stops at the
  // first feasible candidate, which is then the only one chosen from.
  bool stop_at_first_feasible = false;
  // Called after each candidate is evaluated (a search at P = `pp_size`):
  // `done` candidates so far, of family `family` (1-based) of `families`.
  // The CLI prints progress from it when a search takes seconds; unset = none.
  std::function<void(int pp_size, int done, int family, int families, const std::string& name)> progress;
};

// Whether sequence parallelism is on: T > 1 and not turned off.
bool SequenceParallelOn(const PlannerOptions& options);

// What is being planned: a HF config (costs derived with `device`), or a
// fixed layer-cost table (device optional: its comm/memory are used if given),
// or a measured profile (`pipewright profile`; costs from its fits for any
// micro-batch size and sequence length, for `config` if given -- same width,
// any number of blocks -- else for the profiled model).
struct PlannerModel {
  std::optional<ModelConfig> config;
  std::optional<LayerCostTable> table;
  std::optional<DeviceSpec> device;
  std::optional<Profile> profile;
};

// One way to cut the global batch into microbatches.
struct BatchSplit {
  int64_t micro_batch_size = 1;           // b used for costs (the largest microbatch)
  int num_microbatches = 1;               // m
  int64_t global_batch_size = 1;          // D x sum of microbatch_sizes (over all replicas)
  std::vector<int64_t> microbatch_sizes;  // per replica, size m; unequal only when the flags ask for it
};

// Resolves --global-batch-size / --micro-batch-size / --num-microbatches
// (Megatron: m = global / (micro x dp), asserted divisible). Returns the
// splits to search, per replica. Errors (InvalidArgument, naming the flags and
// the numbers): none of --global-batch-size / --num-microbatches given;
// global not divisible by --data-parallel-size, or by --micro-batch-size x
// --data-parallel-size; the three flags disagree; global / dp < m. With
// --global-batch-size and --num-microbatches not dividing it, microbatches
// are unequal (sizes differ by one, larger first) and recorded in the plan.
StatusOr<std::vector<BatchSplit>> ResolveBatch(const PlannerOptions& options);

// The simulated result of one candidate, kept for the chosen one.
struct CandidateArtifacts {
  Program lowered;
  StageCosts costs;
  SimResult sim;
  LayerCostTable table;
};

// Why a candidate lost; Candidate::reason has the numbers.
enum class RejectKind {
  kNone,      // feasible
  kRequest,   // the request itself: a flag the family or the layer count cannot honour (no P or memory helps)
  kMemory,    // over the memory limit
  kCosts,     // no costs for this shape (a layer-cost file or profile made for another)
  kSchedule,  // the schedules core refused it (generator, validator, lowering, simulator)
  kBound,     // not simulated: its step lower bound exceeds a step already found (prune_by_bound)
};
// "request", "memory", "costs", "schedule", "bound" ("" for kNone).
const char* RejectKindName(RejectKind kind);

struct Candidate {
  std::string schedule;    // registry name
  int virtual_stages = 1;  // v
  BatchSplit batch;        // b, m
  std::string recompute;   // none | selective | full
  bool feasible = false;
  RejectKind reject = RejectKind::kNone;
  std::string reason;     // why rejected: the constraint and the numbers (empty if feasible)
  Boundaries boundaries;  // the split used (empty if it never got one)
  // Predictions (valid when simulated, also for memory rejections).
  bool simulated = false;
  double step_s = 0;  // the objective's value
  double makespan_s = 0;
  double steady_step_s = 0;
  double bubble_ratio = 0;  // PLAN_FORMAT rule 8 (global idle fraction)
  // Data parallel (dp_size > 1): the largest per-rank sum of REDUCE_GRAD
  // seconds, and how much the reductions lengthen the step (makespan - the
  // last compute's end, >= 0).
  double reduce_s = 0;
  double reduce_exposed_s = 0;
  // Per rank: simulated peak (rule 7) + the largest recompute workspace of its stages.
  std::vector<int64_t> peak_bytes;
  std::vector<int64_t> static_bytes;
  int64_t max_peak_bytes = 0;
  std::shared_ptr<const CandidateArtifacts> artifacts;  // set for feasible candidates
};

// The smallest P that fits and why P - 1 does not.
struct MinPipeline {
  int pp_size = 0;             // 0 = none up to the layer count
  std::string smaller_reason;  // the closest rejection at pp_size - 1 (empty if pp_size == 1)
};

struct SearchResult {
  Objective objective = Objective::kMakespan;
  std::optional<int64_t> memory_limit_bytes;
  // When the limit comes from a device: its capacity and the reserve kept
  // free (limit = capacity - reserve).
  std::optional<int64_t> capacity_bytes, reserve_bytes;
  int pp_size = 0;
  int dp_size = 1;
  bool distributed_optimizer = false;
  int tp_size = 1;
  bool sequence_parallel = false;
  // Notes for people (e.g. T above gpus_per_node on a CPU device).
  std::vector<std::string> notes;
  std::vector<Candidate> candidates;  // ranked: feasible by step time, then rejected in search order
  int chosen = -1;                    // index into candidates, -1 if none fits
  std::optional<MinPipeline> min_pp;  // when options.find_min_pp
};

// Runs the search. Errors: InvalidArgument for bad options (naming the flag:
// --pp < 1, unknown --schedule, batch flags, first/last-stage overrides that
// do not add up, P * v_min > layers); Infeasible when no candidate fits
// ("... does not fit on P=4 ranks even with full recompute; the smallest P
// that fits is 16; at P=15: <reason>"), with the table of rejections in the
// message. On success `chosen` >= 0.
StatusOr<SearchResult> SearchPlans(const PlannerModel& model, const PlannerOptions& options);

// Like SearchPlans but returns the full result also when nothing fits
// (chosen == -1), for tables and tests. Errors only for bad options.
StatusOr<SearchResult> EvaluateCandidates(const PlannerModel& model, const PlannerOptions& options);

// Smallest P in [1, max_pp] for which some candidate fits with full
// recompute (other options as given). Errors only for bad options.
StatusOr<MinPipeline> FindSmallestPipeline(const PlannerModel& model, const PlannerOptions& options, int max_pp);

// The plan file of the chosen candidate (docs/PLAN_FORMAT.md), with its
// typed model, layers and training sections (from the model config and the
// candidate) and the informational "planner" section (objective, device,
// candidate table, recompute workspace per rank).
// Same inputs -> byte-identical PlanToJson. InvalidArgument if nothing chosen.
StatusOr<Plan> BuildPlan(const SearchResult& result, const PlannerModel& model, const PlannerOptions& options);

// --num-devices N: one search per split T x P x D = N (T fixed by --tp or,
// with search_tensor_parallel, every T <= gpus_per_node dividing N, the heads,
// kv heads and MLP width; P from 1 to the layer count; ZeRO-1 off and on when
// search_distributed_optimizer and D >= 2), each as EvaluateCandidates with
// find_min_pp off.
struct DeviceSplit {
  int tp_size = 1;
  int pp_size = 0;
  int dp_size = 0;
  bool distributed_optimizer = false;
  bool sequence_parallel = false;
  // A lower bound of any candidate's step (the busiest rank's compute at the
  // best micro-batch size, no recompute): splits are searched in its order
  // and skipped once it exceeds the best step found.
  double lower_bound_s = 0;
  bool searched = false;  // false: refused before searching (reason says why)
  std::string reason;     // why no candidate of this split fits or why it was not searched (empty if one fits)
  SearchResult result;    // when searched
  bool feasible() const { return searched && result.chosen >= 0; }
};
struct DeviceSplitSearch {
  int num_devices = 0;
  std::vector<DeviceSplit> splits;  // ascending (T, P, ZeRO-1)
  int chosen = -1;                  // index of the split with the best step time (ties: smaller P), -1 if none fits
};
// Runs the --num-devices search (options.pp_size and dp_size are ignored;
// tp_size too when search_tensor_parallel). A split is refused without
// searching when D does not divide the global batch (naming the numbers),
// the static bytes cannot fit P ranks, or (prune_by_bound) its lower bound
// exceeds the best step found (branch and bound: the chosen plan is the one
// a full search would choose). InvalidArgument when --tp does not divide N.
// Errors: InvalidArgument for num_devices < 1 and for flag errors that hold
// for every split; Infeasible when no split fits (every split's reason in
// the message). The splits share their unit-cost schedule orders (UnitOrders,
// candidate_search.h). Defined in device_splits.cc.
StatusOr<DeviceSplitSearch> SearchDeviceSplits(const PlannerModel& model, const PlannerOptions& options,
                                               int num_devices);

// Layer costs of `model` for micro-batch size b and recompute `r`
// (InvalidArgument when a fixed cost table was made for another b or r, or a
// profile is asked for recompute other than none). With a profile the
// sequence length is --seq-length, else the profile's.
StatusOr<LayerCostTable> CostsFor(const PlannerModel& model, const PlannerOptions& options, int64_t b, Recompute r);

}  // namespace pw
