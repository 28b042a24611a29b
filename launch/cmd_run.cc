// `pipewright run`: replay a plan with LibTorch + MPI, one process per rank:
//   mpirun -np 4 pipewright run --plan plan.json --data corpus.txt --steps 50
#include <cstdio>
#include <memory>

#include "executor/mpi_communicator.h"
#include "executor/train.h"
#include "launch/commands.h"

namespace pw::cli {

namespace {

Status RunRun(const exec::RunOptions& options) {
  PW_ASSIGN_OR_RETURN(std::unique_ptr<exec::MpiEnvironment> env, exec::MpiEnvironment::Init(nullptr, nullptr));
  Status result;
  {
    PW_ASSIGN_OR_RETURN(std::unique_ptr<exec::MpiCommunicator> comm, exec::MpiCommunicator::Create());
    StatusOr<exec::RunSummary> summary = exec::RunTraining(options, *comm, stdout);
    result = summary.status();
    if (!result.ok()) result = result.WithContext("rank " + std::to_string(comm->rank()));
  }
  return result;
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
  cmd->add_option("--weight-decay", options->weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--dtype", *dtype, "float32 or float64")->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("--log-every", options->log_every, "print every k-th step")->capture_default_str();
  cmd->add_option("--save", options->save_dir, "directory to write stage_<s>.pt checkpoints into");
  cmd->add_option("--sample", options->sample_tokens, "after training, print this many sampled bytes");
  cmd->add_option("--prompt", options->sample_prompt, "prompt of --sample");
  cmd->add_option("--temperature", options->temperature, "sampling temperature")->capture_default_str();
  cmd->callback([options, dtype, &ctx] {
    options->double_precision = *dtype == "float64";
    Status st = RunRun(*options);
    if (!st.ok()) Fail(ctx, "run", st);
  });
}

}  // namespace pw::cli
