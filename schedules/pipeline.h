// The one chain from a schedule request (or an imported order) to a
// simulated, lowered program: generate (registry.h) -> validate the compute
// order -> lower, i.e. insert SEND/RECV and, with dp_size > 1, each stage's
// REDUCE_GRAD (lower.h) -> validate the lowered
// program (validate.h, eager and rendezvous) -> simulate (simulate.h). Every
// caller (planner, CLI, visualiser, report, benches, tests) runs it through
// here; none writes the chain out by hand.
#pragma once

#include "base/costs.h"
#include "base/status.h"
#include "schedules/program.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"

namespace pw {

// Where the chain stopped.
enum class PipelineStep { kGenerate, kValidateCompute, kLower, kValidateLowered, kSimulate };
// "generator", "validator (compute order)", "lowering", "validator",
// "simulator": the words the planner's rejections and the CLI's errors use.
const char* PipelineStepName(PipelineStep step);

struct PipelineResult {
  Program compute;  // compute-only order (an imported compute_comms order keeps its messages)
  Program lowered;  // with SEND/RECV (and REDUCE_GRAD when dp_size > 1): what a plan's ranks hold
  SimResult sim;    // simulation of `lowered` under the costs
};

// A failed chain: the step and its Status (the step's own error, unchanged:
// callers add their context).
struct PipelineFailure {
  PipelineStep step = PipelineStep::kGenerate;
  Status status;
};

// Generates `request`'s schedule and runs the rest of the chain with
// request.costs (unit costs when empty). Errors: the failing step's Status;
// `failure` (if given) also receives the step.
StatusOr<PipelineResult> RunPipeline(const ScheduleRequest& request, PipelineFailure* failure = nullptr);

// The chain after generation, for an order from elsewhere (a PyTorch CSV, a
// plan's ranks): validates `program` (eager semantics when it already holds
// SEND/RECV, since imported orders are checked for rendezvous separately by
// CheckRendezvous), lowers it when it holds no SEND/RECV (adding the
// REDUCE_GRADs of program.dp_size > 1 unless it holds them already; then
// validates the lowered program with rendezvous; a lowered order must hold
// its REDUCE_GRADs), and simulates it under `costs` (one entry
// per stage). Errors as RunPipeline.
StatusOr<PipelineResult> SimulateOrder(const Program& program, const StageCosts& costs,
                                       PipelineFailure* failure = nullptr);

}  // namespace pw
