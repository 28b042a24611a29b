// The validator: the one place that decides whether a program is a correct
// pipeline schedule (docs/PLAN_FORMAT.md, rules 1-6b). Every failure names the rank
// and index of the first offending action and shows the schedule grid with
// that step marked "<-- ERROR HERE".
#pragma once

#include "base/costs.h"
#include "base/status.h"
#include "schedules/program.h"

namespace pw {

// Completeness and per-rank order of the compute actions (SEND/RECV ignored):
// each (stage, microbatch) has exactly one F and either one B or one I and
// one W, all on the rank that holds the stage, in the order F < I/B < W.
// Returns InvalidArgument naming the stage and microbatch (and the grid).
Status ValidateComputeOrder(const Program& program);

// Strict "rendezvous" check (rule 6b): every SEND and RECV blocks, in list
// order, until the peer reaches the matching operation (the k-th SEND and
// k-th RECV of a channel = ordered rank pair + direction). Returns
// InvalidArgument "deadlock under rendezvous semantics" with every stuck rank
// marked. A compute-only program passes trivially.
Status CheckRendezvous(const Program& program);

// One FIFO per ordered rank pair, whatever the direction (NCCL: its
// point-to-point operations between two ranks match in posting order and
// carry no tag): for each ordered pair (src, dst), the k-th message src
// sends to dst must be the k-th one dst receives from src. Returns
// InvalidArgument naming both ranks, both actions and their positions, with
// the grid, at the first mismatch. MPI matches by tag (our channel) and does
// not need it.
Status CheckPairOrder(const Program& program);

// Rule 10, the data-parallel gradient reduction: with dp_size 1 no
// REDUCE_GRAD; with dp_size > 1 at most one REDUCE_GRAD per stage (exactly
// one if `require_all`), on the stage's rank, after every B/I/W of that stage
// in the rank's list. Returns InvalidArgument naming the rank, index and
// action (or the stage that lacks one) with the grid marked.
Status ValidateReduceGrad(const Program& program, bool require_all = true);

struct ValidateOptions {
  // Also require rule 6b for lowered programs. Imported plans that fail only
  // this may still run on executors that post receives early.
  bool rendezvous = true;
  // Rule 10 with every stage's REDUCE_GRAD present when dp_size > 1. False
  // for an order that lowering has not yet given its reductions.
  bool require_reduce_grad = true;
};

// Full validation: shape, ValidateComputeOrder, ValidateReduceGrad, for a lowered program exactly
// one SEND and one RECV per cross-rank dependency, then a simulation with unit
// costs (rules 1-6: progress, pairing, FIFO, RECV before its consumer), then
// CheckRendezvous if asked.
Status ValidateProgram(const Program& program, const ValidateOptions& options = {});

}  // namespace pw
