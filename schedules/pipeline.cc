#include "schedules/pipeline.h"

#include "schedules/lower.h"
#include "schedules/validate.h"

namespace pw {

const char* PipelineStepName(PipelineStep step) {
  switch (step) {
    case PipelineStep::kGenerate:
      return "generator";
    case PipelineStep::kValidateCompute:
      return "validator (compute order)";
    case PipelineStep::kLower:
      return "lowering";
    case PipelineStep::kValidateLowered:
      return "validator";
    case PipelineStep::kSimulate:
      return "simulator";
  }
  return "?";
}

namespace {

Status Fail(PipelineFailure* failure, PipelineStep step, Status status) {
  if (failure) *failure = {step, status};
  return status;
}

}  // namespace

StatusOr<PipelineResult> SimulateOrder(const Program& program, const StageCosts& costs, PipelineFailure* failure) {
  PipelineResult out;
  const bool lowered = program.HasComms();
  bool has_reduce = false;
  for (const auto& list : program.ranks)
    for (const Action& a : list) has_reduce |= IsReduceGrad(a.type);
  ValidateOptions first;
  first.rendezvous = !lowered;
  // An order that is not lowered yet gets its reductions with its messages.
  first.require_reduce_grad = lowered || has_reduce;
  Status st = ValidateProgram(program, first);
  if (!st.ok()) return Fail(failure, PipelineStep::kValidateCompute, st);
  out.compute = program;
  if (lowered) {
    out.lowered = program;
  } else {
    StatusOr<Program> with_messages = AddSendRecv(program, costs);
    if (!with_messages.ok()) return Fail(failure, PipelineStep::kLower, with_messages.status());
    out.lowered = std::move(*with_messages);
    if (!has_reduce) {
      StatusOr<Program> with_reduce = AddReduceGrad(out.lowered);
      if (!with_reduce.ok()) return Fail(failure, PipelineStep::kLower, with_reduce.status());
      out.lowered = std::move(*with_reduce);
    }
    st = ValidateProgram(out.lowered);
    if (!st.ok()) return Fail(failure, PipelineStep::kValidateLowered, st);
  }
  StatusOr<SimResult> sim = Simulate(out.lowered, costs);
  if (!sim.ok()) return Fail(failure, PipelineStep::kSimulate, sim.status());
  out.sim = std::move(*sim);
  return out;
}

StatusOr<PipelineResult> RunPipeline(const ScheduleRequest& request, PipelineFailure* failure) {
  StatusOr<Program> compute = GenerateSchedule(request);
  if (!compute.ok()) return Fail(failure, PipelineStep::kGenerate, compute.status());
  compute->dp_size = request.dp_size;
  const StageCosts costs = request.costs.stages.empty() ? UniformCosts(compute->num_stages) : request.costs;
  return SimulateOrder(*compute, costs, failure);
}

}  // namespace pw
