// Pre-flight checks the executor runs before any compute. Torch-free.
#pragma once

#include "base/status.h"
#include "executor/comm/communicator.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "plan/replica_batch.h"

namespace pw::exec {

// Collective: every rank contributes PlanHash(plan), or its error if it could
// not load the plan. Returns OK only if every rank loaded a plan with the
// same hash. Errors (the same on every rank, so all refuse together):
// InvalidArgument "plan hash mismatch: rank 0 has 1a2b..., rank 2 has 9f..."
// or "rank r cannot start: <its error>" if a rank failed to load the plan
// (or, from RunTraining, its data).
Status AgreeOnPlan(const StatusOr<Plan>& plan, Communicator& comm);

// What the executor needs from a plan, checked.
struct CheckedPlan {
  ModelConfig model;  // the plan's model section, one the executor builds
  ReplicaBatch training;
};

// Local checks, deterministic (same result on every rank):
//  - tp_size >= 1, dp_size >= 1;
//  - world_size == plan.pp_size x plan.dp_size ("plan is for pp_size=2 x
//    dp_size=2 = 4 ranks but 3 were started (mpirun -np 3); run with -np 4"),
//    x plan.tp_size with tensor parallelism ("plan is for tp 2 x pp 2 x dp 1
//    = 4 ranks but 3 were started; run with mpirun -np 4");
//  - tp_size > 1: it divides the heads, kv heads and MLP width, and with
//    sequence_parallel the sequence length (CheckTensorParallel, naming
//    --tensor-model-parallel-size / --sequence-parallel); sequence_parallel
//    only with tp_size > 1;
//  - ValidateProgram on the plan's action lists, eager semantics (PLAN_FORMAT
//    rules 1-6: completeness, order, pairing, FIFO, no deadlock); the message
//    carries the grid with the stuck actions marked;
//    (with rule 10: exactly one <s>REDUCE_GRAD per stage, after its last
//    B/W, when dp_size > 1, none with dp_size 1);
//  - training.global_batch_size = dp_size x sum(microbatch_sizes);
//  - the typed `model` section is one the executor builds
//    (models::CheckExecutorModel: a registry family's shape, tied or untied head, no dropout) and the stages' layer
//    ranges cover exactly its N+2 layers;
//  - the `training` section: recompute none, dtype fp32 or fp64,
//    seq_length <= n_positions (vocab_size is checked against the data by
//    TextDataset::Open and against the tokenizer by SampleText).
// Errors: InvalidArgument naming the field or the problem.
// `one_fifo_per_pair`: the communicator matches messages between two ranks
// in posting order without a tag and blocks (NCCL): also rule 6b
// (CheckRendezvous) and CheckPairOrder.
StatusOr<CheckedPlan> PreflightCheck(const Plan& plan, int world_size, bool one_fifo_per_pair = false);

}  // namespace pw::exec
