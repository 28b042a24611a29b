#include "executor/preflight.h"

#include "schedules/validate.h"

namespace pw::exec {

Status AgreeOnPlan(const StatusOr<Plan>& plan, Communicator& comm) {
  const std::string mine = plan.ok() ? "H" + PlanHash(*plan) : "E" + plan.status().ToString();
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.AllGather(mine));
  for (size_t r = 0; r < all.size(); ++r) {
    if (!all[r].empty() && all[r][0] == 'E')
      return Status::InvalidArgument("rank " + std::to_string(r) + " cannot start: " + all[r].substr(1));
  }
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0])
      return Status::InvalidArgument("plan hash mismatch: rank 0 has " + all[0].substr(1) + ", rank " +
                                     std::to_string(r) + " has " + all[r].substr(1) +
                                     "; every rank must load the same plan file");
  }
  return Status::Ok();
}

StatusOr<CheckedPlan> PreflightCheck(const Plan& plan, int world_size) {
  if (world_size != plan.pp_size)
    return Status::InvalidArgument("plan is for pp_size=" + std::to_string(plan.pp_size) + " ranks but " +
                                   std::to_string(world_size) + " were started (mpirun -np " +
                                   std::to_string(world_size) + "); run with -np " + std::to_string(plan.pp_size));
  ValidateOptions vo;
  vo.rendezvous = false;  // receives are posted early and sends never block (PLAN_FORMAT rule 3)
  Program program = PlanProgram(plan);
  if (!program.HasComms() && program.pp_size > 1)
    return Status::InvalidArgument("plan holds no SEND/RECV actions: the executor needs lowered action lists");
  Status valid = ValidateProgram(program, vo);
  if (!valid.ok()) return valid.WithContext("plan fails pre-flight validation (nothing was computed)");

  CheckedPlan out;
  auto model = plan.extra.find("model");
  if (model == plan.extra.end()) return Status::InvalidArgument("plan field 'model' (extra) is missing");
  PW_ASSIGN_OR_RETURN(out.model, models::ParseGptConfig(*model, "plan field 'model'"));
  const int L = out.model.NumLayers();
  if (plan.stages.size() != static_cast<size_t>(plan.num_stages))
    return Status::InvalidArgument("plan has " + std::to_string(plan.stages.size()) + " stages, num_stages is " +
                                   std::to_string(plan.num_stages));
  int next = 0;
  for (const PlanStage& s : plan.stages) {
    if (s.layer_begin != next || s.layer_end <= s.layer_begin)
      return Status::InvalidArgument("plan stages[" + std::to_string(s.index) + "].layers [" +
                                     std::to_string(s.layer_begin) + ", " + std::to_string(s.layer_end) +
                                     ") does not continue at layer " + std::to_string(next));
    next = s.layer_end;
  }
  if (next != L)
    return Status::InvalidArgument("plan stages cover layers [0, " + std::to_string(next) + ") but the model has " +
                                   std::to_string(L) + " layers (embedding, " + std::to_string(out.model.n_layer) +
                                   " blocks, head)");
  PW_ASSIGN_OR_RETURN(out.training, ReadTrainingShape(plan));
  // What the executor does not do must not be what the plan's memory and
  // time predictions assumed.
  const nlohmann::json& t = plan.extra.at("training");
  if (t.contains("recompute") && t["recompute"].is_string() && t["recompute"] != "none")
    return Status::InvalidArgument("plan field 'training.recompute' is '" + t["recompute"].get<std::string>() +
                                   "': the executor keeps every activation (no recomputation), so the plan's "
                                   "memory prediction would not hold; plan with --recompute-granularity none");
  if (t.contains("dtype") && t["dtype"].is_string() && t["dtype"] != "fp32")
    return Status::InvalidArgument("plan field 'training.dtype' is '" + t["dtype"].get<std::string>() +
                                   "': the executor computes in float32 (float64 with --dtype float64 for "
                                   "checks); plan with --dtype fp32");
  if (out.training.seq_length > out.model.n_positions)
    return Status::InvalidArgument("plan field 'training.seq_length' " + std::to_string(out.training.seq_length) +
                                   " exceeds the model's n_positions " + std::to_string(out.model.n_positions));
  // Tokens are the bytes of --data (0..255): a smaller vocabulary would index
  // past the embedding table on the first byte above it.
  if (out.model.vocab_size < 256)
    return Status::InvalidArgument("plan field 'model.vocab_size' is " + std::to_string(out.model.vocab_size) +
                                   ": the executor's tokens are bytes, so it needs vocab_size >= 256");
  return out;
}

}  // namespace pw::exec
