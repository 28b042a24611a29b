#include "executor/runtime/preflight.h"

#include "executor/comm/agree.h"
#include "models/spec/footprint.h"
#include "models/torch/executor_model.h"
#include "schedules/validate.h"

namespace pw::exec {

Status AgreeOnPlan(const StatusOr<Plan>& plan, Communicator& comm) {
  PW_RETURN_IF_ERROR(AgreeOnStatus(plan.ok() ? Status::Ok() : plan.status().WithContext("cannot start"), comm));
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.AllGather("H" + PlanHash(*plan)));
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0])
      return Status::InvalidArgument("plan hash mismatch: rank 0 has " + all[0].substr(1) + ", rank " +
                                     std::to_string(r) + " has " + all[r].substr(1) +
                                     "; every rank must load the same plan file");
  }
  return Status::Ok();
}

StatusOr<CheckedPlan> PreflightCheck(const Plan& plan, int world_size, bool one_fifo_per_pair) {
  if (plan.dp_size < 1)
    return Status::InvalidArgument("plan field 'dp_size' is " + std::to_string(plan.dp_size) + ": must be >= 1");
  if (plan.tp_size < 1)
    return Status::InvalidArgument("plan field 'tp_size' is " + std::to_string(plan.tp_size) + ": must be >= 1");
  if (plan.sequence_parallel && plan.tp_size == 1)
    return Status::InvalidArgument(
        "plan field 'sequence_parallel' is true with tp_size 1: sequence parallelism shards the sequence over "
        "tensor-parallel ranks (plan with --tp > 1 or --no-sequence-parallel)");
  // World = tp_size x pp_size x dp_size ranks (docs/DATA_PARALLEL.md).
  const int64_t ranks = static_cast<int64_t>(plan.pp_size) * plan.dp_size * plan.tp_size;
  if (plan.tp_size > 1 && world_size != ranks)
    return Status::InvalidArgument("plan is for tp " + std::to_string(plan.tp_size) + " x pp " +
                                   std::to_string(plan.pp_size) + " x dp " + std::to_string(plan.dp_size) + " = " +
                                   std::to_string(ranks) + " ranks but " + std::to_string(world_size) +
                                   " were started; run with mpirun -np " + std::to_string(ranks));
  if (world_size != ranks) {
    const std::string grid = plan.dp_size == 1
                                 ? "pp_size=" + std::to_string(plan.pp_size)
                                 : "pp_size=" + std::to_string(plan.pp_size) +
                                       " x dp_size=" + std::to_string(plan.dp_size) + " = " + std::to_string(ranks);
    return Status::InvalidArgument("plan is for " + grid + " ranks but " + std::to_string(world_size) +
                                   " were started (mpirun -np " + std::to_string(world_size) + "); run with -np " +
                                   std::to_string(ranks));
  }
  ValidateOptions vo;
  // MPI and TCP post receives early and sends never block (PLAN_FORMAT rule
  // 3); NCCL runs one operation after another with one FIFO per rank pair:
  // rule 6b and the pair order must hold too.
  vo.rendezvous = one_fifo_per_pair;
  Program program = PlanProgram(plan);
  if (!program.HasComms() && program.pp_size > 1)
    return Status::InvalidArgument("plan holds no SEND/RECV actions: the executor needs lowered action lists");
  Status valid = ValidateProgram(program, vo);
  if (valid.ok() && one_fifo_per_pair) valid = CheckPairOrder(program);
  if (!valid.ok())
    return valid.WithContext(std::string("plan fails pre-flight validation") +
                             (one_fifo_per_pair ? " for the NCCL communicator" : "") + " (nothing was computed)");

  CheckedPlan out;
  if (!plan.model)
    return Status::InvalidArgument(
        "plan section 'model' is missing: the executor builds the model from it "
        "(write the plan with `pipewright plan`)");
  if (!plan.training)
    return Status::InvalidArgument(
        "plan section 'training' is missing: the executor needs seq_length and the "
        "microbatch sizes (write the plan with `pipewright plan`)");
  PW_RETURN_IF_ERROR(models::CheckExecutorModel(*plan.model, "plan section 'model'"));
  out.model = *plan.model;
  const int L = LayerCount(out.model);
  // The reader checked that the stages continue one another and that the
  // layer list is the model's; the last stage must end at its last layer.
  if (plan.stages.empty() || plan.stages.back().layer_end != L)
    return Status::InvalidArgument("plan stages cover layers [0, " +
                                   std::to_string(plan.stages.empty() ? 0 : plan.stages.back().layer_end) +
                                   ") but the model has " + std::to_string(L) + " layers (embedding, " +
                                   std::to_string(out.model.num_layers) + " blocks, head)");
  PW_ASSIGN_OR_RETURN(out.training, ReadReplicaBatch(plan));
  if (plan.tp_size > 1) {
    Status tp = CheckTensorParallel(out.model, plan.tp_size, plan.sequence_parallel, out.training.seq_length);
    if (!tp.ok()) return tp.WithContext("plan fields 'tp_size' / 'sequence_parallel'");
  }
  // Global batch = dp_size x the rows one replica runs (contract of
  // docs/DATA_PARALLEL.md): replica d reads rows [d*R, (d+1)*R).
  const int64_t global_rows = static_cast<int64_t>(plan.dp_size) * out.training.rows;
  if (plan.training->global_batch_size != global_rows)
    return Status::InvalidArgument("plan field 'training.global_batch_size' is " +
                                   std::to_string(plan.training->global_batch_size) + " but dp_size " +
                                   std::to_string(plan.dp_size) + " x sum(training.microbatch_sizes) " +
                                   std::to_string(out.training.rows) + " = " + std::to_string(global_rows));
  // What the executor does not do must not be what the plan's memory and
  // time predictions assumed.
  const PlanTraining& t = *plan.training;
  if (t.recompute != Recompute::kNone)
    return Status::InvalidArgument(std::string("plan field 'training.recompute' is '") + RecomputeName(t.recompute) +
                                   "': the executor keeps every activation (no recomputation), so the plan's "
                                   "memory prediction would not hold; plan with --recompute-granularity none");
  if (t.precision == Precision::kMixedBf16)
    return Status::InvalidArgument(
        "plan field 'training.dtype' is 'bf16': the executor computes in float32 (or "
        "float64 for checks); plan with --dtype fp32");
  if (out.training.seq_length > out.model.max_positions)
    return Status::InvalidArgument("plan field 'training.seq_length' " + std::to_string(out.training.seq_length) +
                                   " exceeds the model's n_positions " + std::to_string(out.model.max_positions));
  // The vocabulary is checked against the data where the tokens come from
  // (executor/data/data.h: bytes need >= 256, a tokenizer must match, a token file
  // must stay below it) and by the sampler.
  return out;
}

}  // namespace pw::exec
