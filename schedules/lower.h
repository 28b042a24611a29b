// Lowering: insert SEND/RECV into a compute-only program (docs/PLAN_FORMAT.md
// rules 2-4, 6b). Stages that share a rank hand tensors over locally: no
// SEND/RECV between them. Pure functions: the input is not changed.
#pragma once

#include "base/costs.h"
#include "base/status.h"
#include "schedules/program.h"

namespace pw {

enum class LoweringStyle {
  // Default. Simulates the compute-only program with `costs`, then merges all
  // ranks' compute actions and all messages into one global order (by time;
  // ties by kind, rank, index; each message right after its producer) and
  // projects it onto each rank. Every message is one event of that order, so
  // the result completes under eager *and* rendezvous semantics, FIFO per
  // channel holds by construction, and each RECV is posted as soon as the
  // producer finishes, ahead of the receiver's own later computes.
  kGlobalOrder,
  // PyTorch-like naive placement: SEND right after its producer, RECV right
  // before its consumer. Valid under eager semantics only; kept to show (and
  // test) why kGlobalOrder exists: 1F1B deadlocks with it under rendezvous.
  kJustInTime,
};

// Returns the lowered copy of `compute_only`.
// Errors: InvalidArgument if the input already holds SEND/RECV, fails
// ValidateComputeOrder, or (kGlobalOrder) cannot be simulated (deadlock);
// the message carries the grid.
// `costs` must describe program.num_stages stages (use UniformCosts).
StatusOr<Program> AddSendRecv(const Program& compute_only, const StageCosts& costs,
                              LoweringStyle style = LoweringStyle::kGlobalOrder);

// Returns a copy of `program` (compute-only or lowered, holding no
// REDUCE_GRAD) with each stage's REDUCE_GRAD inserted on its rank right after
// the stage's last B or W, past the SEND/RECV that directly follow that pass
// (so its messages are posted first), when program.dp_size > 1; unchanged
// when dp_size is 1. Errors: InvalidArgument if it already holds a
// REDUCE_GRAD or a stage has no backward pass.
StatusOr<Program> AddReduceGrad(const Program& program);

}  // namespace pw
