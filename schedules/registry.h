// The schedule registry: every generator by canonical name (PLAN_FORMAT.md
// `schedule`), and one entry point that refuses impossible requests with a
// reason naming the user-facing option.
//
// Generators emit compute-only programs (F/B/I/W); lower.h adds SEND/RECV.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedules/costs.h"
#include "schedules/program.h"
#include "schedules/status.h"

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
  // (static bytes excluded); nullopt = unlimited. Used by memory-aware
  // generators (zb-auto, zb-v) and checked by fixed ones that need a minimum
  // (zb-h2).
  std::optional<double> memory_limit;
};

// Static facts about a schedule family.
struct ScheduleInfo {
  std::string name;          // canonical name
  std::string display_name;  // e.g. "Interleaved 1F1B"
  Placement placement;       // stage -> rank placement
  int default_virtual_stages;
  int min_virtual_stages;    // allowed v range (inclusive)
  int max_virtual_stages;    // 0 = no upper bound
  bool split_backward;       // uses I/W instead of B
  std::string source;        // paper / code the order follows
};

// Canonical names of every registered generator, in a fixed order.
std::vector<std::string> ScheduleNames();

// Info of `name` (case-insensitive; also accepts PyTorch's class names such
// as "Interleaved1F1B", "ZBVZeroBubble"). NotFound lists the known names.
StatusOr<ScheduleInfo> FindSchedule(const std::string& name);

// Generates the compute-only program for `request`. Errors: NotFound for an
// unknown schedule; InvalidArgument for P < 1, m < 1 or a v outside the
// family's range (naming --virtual-stages); Infeasible for a schedule that
// cannot exist for the inputs (e.g. zb-h2 under its memory need, naming
// --memory-limit). The returned program passes ValidateComputeOrder.
StatusOr<Program> GenerateSchedule(const ScheduleRequest& request);

// The costs a request stands for: request.costs if set, else unit costs for
// P*v stages (v resolved to the family default).
StatusOr<StageCosts> RequestCosts(const ScheduleRequest& request);

}  // namespace pw
