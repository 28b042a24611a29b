// The schedule registry: every generator by canonical name (docs/PLAN_FORMAT.md
// `schedule`), and one entry point that refuses impossible requests with a
// reason naming the user-facing option.
//
// Generators emit compute-only programs (F/B/I/W); lower.h adds SEND/RECV.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/costs.h"
#include "base/status.h"
#include "schedules/program.h"

namespace pw {

// What a generator is asked for. Option names in errors are the CLI's:
// --pp, --num-microbatches, --virtual-stages, --memory-limit, --costs.
struct ScheduleRequest {
  std::string schedule;      // canonical name, e.g. "1f1b" (see ScheduleNames())
  int pp_size = 0;           // P >= 1
  int num_microbatches = 0;  // m >= 1
  int virtual_stages = 0;    // v: stages per rank; 0 = the family's default
  // Per-stage costs (size P*v), used by cost-aware generators (zb-auto, zb-v)
  // and by lowering. Empty = unit costs (F = I = W = 1 s, activation =
  // wstash = 1 byte).
  StageCosts costs;
  // Per-rank activation memory limit in the same bytes as costs.memory
  // (static bytes excluded); nullopt = unlimited. Memory-adaptive generators
  // (ScheduleInfo::memory_adaptive: zb-auto, zb-v) fit their order to it;
  // GenerateSchedule checks every family's order against it.
  std::optional<double> memory_limit;
  // Per-rank activation limits, one per rank (size P), for callers whose
  // ranks have different room (the planner: the device limit less each
  // rank's static and workspace bytes). Non-empty: used instead of
  // memory_limit. Empty: memory_limit (or none) on every rank.
  std::vector<double> rank_memory_limits;
  // D: data-parallel replicas (--dp). The generated order is the same; with
  // D > 1 RunPipeline gives each stage its REDUCE_GRAD (lower.h AddReduceGrad)
  // timed by costs.stages[s].reduce_grad.
  int dp_size = 1;
};

// True if `request` sets a memory limit (either field).
bool HasMemoryLimit(const ScheduleRequest& request);

// Activation limit of `rank` under `request` (rank_memory_limits[rank] if
// set, else memory_limit), +infinity if none.
double RankMemoryLimit(const ScheduleRequest& request, int rank);

// Static facts about a schedule family.
struct ScheduleInfo {
  std::string name;          // canonical name
  std::string display_name;  // e.g. "Interleaved 1F1B"
  Placement placement;       // stage -> rank placement
  int default_virtual_stages;
  int min_virtual_stages;  // allowed v range (inclusive)
  int max_virtual_stages;  // 0 = no upper bound
  bool split_backward;     // uses I/W instead of B
  std::string source;      // paper / code the order follows
  // The generator fits its order to the request's memory limit (fewer
  // microbatches in flight under a lower limit: zb-auto, zb-v). Other
  // families emit one order whatever the limit; GenerateSchedule refuses it
  // if it does not fit. The least memory an adaptive family can run in is
  // that of OneMicrobatchOrder.
  bool memory_adaptive = false;
};

// Canonical names of every registered generator, in a fixed order.
std::vector<std::string> ScheduleNames();

// Info of `name` (case-insensitive; also accepts PyTorch's class names such
// as "Interleaved1F1B", "ZBVZeroBubble"). NotFound lists the known names.
StatusOr<ScheduleInfo> FindSchedule(const std::string& name);

// Generates the compute-only program for `request`. Errors: NotFound for an
// unknown schedule; InvalidArgument for P < 1, m < 1, a v outside the
// family's range (naming --virtual-stages) or rank_memory_limits not of size
// P; Infeasible for a schedule that cannot exist for the inputs. With a
// memory limit, every family's order is checked once here, after its
// generator: Simulate() of the compute-only program with request.costs, and
// each rank's activation peak (PLAN_FORMAT rule 7 walk, peak - static bytes)
// must be within its limit, else Infeasible naming --memory-limit, the rank,
// its peak and the limit. The returned program passes ValidateComputeOrder.
StatusOr<Program> GenerateSchedule(const ScheduleRequest& request);

// The family's order for one microbatch (m = 1) with the least memory any of
// its orders can have: each rank runs the F of its stages upwards, then for
// its stages downwards the I and right after it the W (or the B). Its memory
// walk is the bound below which a memory-adaptive family is Infeasible (one
// microbatch in flight); the planner splits layers against it for those
// families. Same argument errors as GenerateSchedule (num_microbatches and
// the memory limit are ignored).
StatusOr<Program> OneMicrobatchOrder(const ScheduleRequest& request);

// The costs a request stands for: request.costs if set, else unit costs for
// P*v stages (v resolved to the family default).
StatusOr<StageCosts> RequestCosts(const ScheduleRequest& request);

}  // namespace pw
