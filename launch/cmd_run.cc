// `pipewright run`: replay a plan with LibTorch + MPI, one process per rank:
//   mpirun -np 4 pipewright run --plan plan.json --data corpus.txt --steps 50
#include <cstdio>
#include <memory>

#include "executor/mpi_communicator.h"
#include "executor/train.h"
#include "launch/commands.h"

namespace pw::cli {

namespace {

// Refusals before training (bad plan, wrong -np, missing data, pre-flight)
// are reached by every rank together; anything else is one rank failing in
// the middle of a step while its peers wait for its messages.
bool EveryRankStopsTogether(const Status& st) {
  return st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kNotFound ||
         st.code() == StatusCode::kInfeasible;
}

void RunRun(const exec::RunOptions& options, CommandContext& ctx) {
  StatusOr<std::unique_ptr<exec::MpiEnvironment>> env = exec::MpiEnvironment::Init(nullptr, nullptr);
  if (!env.ok()) return Fail(ctx, "run", env.status());
  Status result;
  {
    StatusOr<std::unique_ptr<exec::MpiCommunicator>> comm = exec::MpiCommunicator::Create();
    if (!comm.ok()) return Fail(ctx, "run", comm.status());
    result = exec::RunTraining(options, **comm, stdout).status();
  }
  if (result.ok()) return;
  Fail(ctx, "run", result);
  std::fflush(stdout);
  std::fflush(stderr);
  // Stop the peers too rather than leave them blocked in a receive forever.
  if (!EveryRankStopsTogether(result)) exec::MpiEnvironment::AbortJob(ctx.exit_code);
}

}  // namespace

void RegisterRunCommand(CLI::App& app, CommandContext& ctx) {
  auto options = std::make_shared<exec::RunOptions>();
  auto dtype = std::make_shared<std::string>("float32");
  CLI::App* cmd = app.add_subcommand("run", "train by replaying a plan (launch with mpirun -np <pp_size>)");
  cmd->add_option("--plan", options->plan_path, "plan file (PLAN_FORMAT.md) with model and training fields")
      ->required();
  cmd->add_option("--data", options->data_path, "training text file (bytes are tokens)")->required();
  cmd->add_option("--steps", options->steps, "optimizer steps")->capture_default_str();
  cmd->add_option("--seed", options->seed, "seed of data order and initial weights")->capture_default_str();
  cmd->add_option("--lr", options->lr, "AdamW learning rate")->capture_default_str();
  cmd->add_option("--warmup-steps", options->warmup_steps, "linear warm-up steps, then cosine decay to lr/10")
      ->capture_default_str();
  cmd->add_option("--adam-beta2", options->beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--weight-decay", options->weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--dtype", *dtype, "float32 or float64")->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("--log-every", options->log_every, "print every k-th step")->capture_default_str();
  cmd->add_option("--save", options->save_dir, "directory to write stage_<s>.pt checkpoints into");
  cmd->add_option("--sample", options->sample_tokens, "after training, print this many sampled bytes");
  cmd->add_option("--prompt", options->sample_prompt, "prompt of --sample");
  cmd->add_option("--temperature", options->temperature, "sampling temperature")->capture_default_str();
  cmd->callback([options, dtype, &ctx] {
    options->double_precision = *dtype == "float64";
    RunRun(*options, ctx);
  });
}

}  // namespace pw::cli
