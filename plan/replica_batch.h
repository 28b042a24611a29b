// The rows one data-parallel replica runs in a step, as the executor reads
// them from a plan's `training` section (docs/PLAN_FORMAT.md): the sequence
// length, each microbatch's rows and where each starts in the replica's
// batch. The engine, the stage backend, the data loader and the benches all
// take it from here. (Not models/spec's TrainingShape, which is the per
// microbatch shape the cost formulas see.)
#pragma once

#include <vector>

#include "base/status.h"
#include "plan/plan.h"

namespace pw {

struct ReplicaBatch {
  int seq_length = 0;                 // s: tokens per row
  std::vector<int> microbatch_sizes;  // rows of each microbatch, size m
  int rows = 0;                       // sum of microbatch_sizes: the replica's rows per step
  std::vector<int> row_offsets;       // first row of each microbatch in the replica's batch, size m
};

// From plan.training (whose sizes the plan reader checked). Errors:
// InvalidArgument naming the section when it is missing.
StatusOr<ReplicaBatch> ReadReplicaBatch(const Plan& plan);

}  // namespace pw
