// `pipewright run`: replay a plan with LibTorch + MPI, one process per rank:
//   mpirun -np 4 pipewright run --plan plan.json --data corpus.txt --steps 50
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/format.h"
#include "executor/comm/communicator_factory.h"
#include "executor/comm/launch_env.h"
#include "executor/comm/mpi_communicator.h"
#include "executor/runtime/train.h"
#include "executor/runtime/watchdog.h"
#include "launch/commands.h"
#include "launch/flags.h"

namespace pw::cli {

namespace {

// Refusals before training (bad plan, wrong -np, missing data, pre-flight)
// are reached by every rank together; anything else is one rank failing in
// the middle of a step while its peers wait for its messages. A non-finite
// loss is seen by every rank at the same step (the loss is all-gathered).
bool EveryRankStopsTogether(const Status& st) {
  return st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kNotFound ||
         st.code() == StatusCode::kInfeasible || exec::IsNonFiniteLoss(st) || exec::IsStragglerStop(st);
}

void RunRun(exec::RunOptions options, double watchdog_s, const std::string& comm_kind, CommandContext& ctx) {
  // Option checks first, before the launcher and any peer: every rank has the
  // same options, so every rank refuses alike.
  if (!std::isfinite(watchdog_s) || watchdog_s < 0) {
    return Fail(
        ctx, "run",
        Status::InvalidArgument("--watchdog-s " + FormatShort(watchdog_s) + ": must be finite and >= 0 (0 = never)"));
  }
  if (Status st = exec::ValidateRunOptions(options); !st.ok()) return Fail(ctx, "run", st);
  if (comm_kind == "nccl" && options.device != "cuda")
    return Fail(ctx, "run", Status::InvalidArgument("--comm nccl needs --device cuda (NCCL moves GPU buffers)"));
  if (Status st = exec::CheckCommunicatorKind(comm_kind, "--comm"); !st.ok()) return Fail(ctx, "run", st);
  StatusOr<exec::LaunchEnv> launch = exec::ReadLaunchEnv();
  if (!launch.ok()) return Fail(ctx, "run", launch.status());
  options.local_rank = launch->local_rank;
  static exec::WaitBoard board;  // read by the SIGTERM handler: lives for the process
  options.board = &board;
  exec::CommunicatorSpec spec;
  spec.kind = comm_kind;
  spec.watchdog_s = watchdog_s;
  spec.local_rank = launch->local_rank;
  spec.rank = launch->rank;
  if (launch->launcher == "torchrun") {
    // torchrun starts processes without MPI: a full mesh of TCP sockets,
    // rendezvous on MASTER_ADDR:MASTER_PORT (what torchrun sets), carries
    // the messages (CPU) or, with --comm nccl, NCCL's bootstrap: the
    // ncclUniqueId of the world and of every group goes through it.
    spec.kind = comm_kind == "nccl" ? "nccl" : "tcp";
    spec.bootstrap = "tcp";
    spec.rank = launch->rank;
    spec.world_size = launch->world_size;
    if (const char* addr = std::getenv("MASTER_ADDR")) spec.tcp.master_addr = addr;
    if (const char* port = std::getenv("MASTER_PORT")) spec.tcp.master_port = std::atoi(port);
    exec::InstallTerminationReport(&board, launch->rank);
    StatusOr<std::unique_ptr<exec::CommunicatorHandle>> comm = exec::MakeCommunicator(spec);
    if (!comm.ok()) return Fail(ctx, "run", comm.status());
    options.device_messages = (*comm)->comm().device_buffers();
    Status result = exec::RunTraining(options, (*comm)->comm(), stdout).status();
    if (result.ok()) result = (*comm)->Finish();
    if (!result.ok()) Fail(ctx, "run", result);
    std::fflush(stdout);
    return;  // a failed rank's peers see its sockets close and fail too
  }
  StatusOr<std::unique_ptr<exec::MpiEnvironment>> env = exec::MpiEnvironment::Init(nullptr, nullptr);
  if (!env.ok()) return Fail(ctx, "run", env.status());
  if ((*env)->world_size() != launch->world_size)
    return Fail(ctx, "run",
                Status::InvalidArgument(
                    "the launcher (" + launch->launcher + ") started " + std::to_string(launch->world_size) +
                    " ranks but MPI sees " + std::to_string((*env)->world_size()) +
                    "; start the ranks with the launcher MPI was built for (launch/mpirun.sh, launch/srun.sh)"));
  exec::InstallTerminationReport(&board, (*env)->world_rank());
  Status result;
  {
    // mpi, or nccl bootstrapped through MPI (rank 0's ncclUniqueId,
    // all-gathered; one GPU per rank).
    StatusOr<std::unique_ptr<exec::CommunicatorHandle>> comm = exec::MakeCommunicator(spec);
    if (!comm.ok()) {
      result = comm.status();
    } else {
      options.device_messages = (*comm)->comm().device_buffers();
      result = exec::RunTraining(options, (*comm)->comm(), stdout).status();
      if (result.ok()) result = (*comm)->Finish();
    }
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
  auto watchdog_s = std::make_shared<double>(300.0);
  auto comm_kind = std::make_shared<std::string>("mpi");
  CLI::App* cmd = app.add_subcommand("run", kRunDescription);
  cmd->add_option("--plan", options->plan_path, "plan file (docs/PLAN_FORMAT.md) with model and training fields")
      ->required();
  cmd->add_option("--data", options->data_path,
                  "training data: a text file (bytes are tokens, or --tokenizer), a flat uint16/uint32 token file "
                  "(--token-dtype) or an llm.c token file (header); memory-mapped (docs/DATA.md)")
      ->required();
  cmd->add_option(
      "--tokenizer", options->tokenizer,
      "SentencePiece .model, HF tokenizer.json or a directory holding one: tokenizes text --data and --sample; "
      "its vocabulary = model.vocab_size");
  cmd->add_option("--token-dtype", options->token_dtype,
                  "--data is a flat little-endian token array of this type: uint16 or uint32 (an llm.c header "
                  "says it itself)");
  cmd->add_option("--data-order", options->data_order,
                  "random (seeded permutation of the windows per epoch) or sequential (file order, docs/DATA.md)")
      ->capture_default_str();
  cmd->add_option("--steps", options->steps, "optimizer steps")->capture_default_str();
  cmd->add_option("--seed", options->seed, "seed of data order and initial weights")->capture_default_str();
  cmd->add_option("--lr", options->lr, "AdamW learning rate (>= 0; 0 keeps the weights: loss checks)")
      ->capture_default_str();
  cmd->add_option("--warmup-steps", options->warmup_steps,
                  "linear warm-up steps, then cosine decay to lr/10 (0 = no warm-up)")
      ->capture_default_str();
  cmd->add_option("--adam-beta2", options->beta2, "AdamW beta2, in [0, 1)")->capture_default_str();
  cmd->add_option("--weight-decay", options->weight_decay, "AdamW weight decay (>= 0)")->capture_default_str();
  AddDtypeFlag(cmd, &options->dtype,
               std::string(kDtypeHelp) +
                   ". Default: the plan's training.dtype, which run trains (fp32 or fp64, "
                   "LibTorch's float32 or float64); given, it must be the plan's");
  cmd->add_option("--log-every", options->log_every,
                  "print every k-th step and the last (0: about " + std::to_string(exec::kProgressLines) +
                      " lines whatever the run's length)")
      ->capture_default_str();
  cmd->add_option("--save", options->save_dir,
                  "write the trained model here as a checkpoint (per-layer files + manifest.json; what generate, "
                  "export and --resume read)");
  cmd->add_option("--sample", options->sample_tokens, "after training, print this many sampled tokens (0 = none)");
  cmd->add_option("--prompt", options->sample_prompt, "prompt of --sample");
  cmd->add_option("--temperature", options->temperature, "sampling temperature (> 0)")->capture_default_str();
  cmd->add_option("--checkpoint-dir", options->checkpoint_dir,
                  "root of step_<n>/ checkpoints (per-layer files + manifest)");
  cmd->add_option(
      "--checkpoint-every", options->checkpoint_every,
      "save a checkpoint after every N-th step (0: once after the last step, when --checkpoint-dir is given)");
  cmd->add_option("--resume", options->resume,
                  "continue from a step_<n> checkpoint directory, or the latest in a root");
  cmd->add_option("--init-from", options->init_from,
                  "start from a Hugging Face model directory (config.json + safetensors) of the plan's model");
  cmd->add_option("--clip-grad-norm", options->clip_grad_norm,
                  "clip gradients by their global L2 norm (default: the plan's training.clip_grad_norm; 0 = off)");
  cmd->add_option("--trace", options->trace_path, "write a measured Perfetto/Chrome trace of one step (all ranks)");
  cmd->add_option("--trace-step", options->trace_step, "0-based step to trace, below --steps (default: the last)");
  cmd->add_option("--device", options->device,
                  "the kind of device each rank computes on: cpu or cuda (plan --device names the device's spec, "
                  "whose numbers the plan's costs come from)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option(
         "--comm", *comm_kind,
         "mpi (host messages; MPI-staged with --device cuda; under torchrun: TCP) or nccl (GPU messages, one GPU "
         "per rank; bootstrapped by MPI, or by the TCP rendezvous under torchrun)")
      ->check(CLI::IsMember({"mpi", "nccl"}))
      ->capture_default_str();
  cmd->add_option(
         "--watchdog-s", *watchdog_s,
         "a rank blocked this long on a peer (message, barrier) exits non-zero naming what it waited on; 0 = never")
      ->capture_default_str();
  cmd->add_option("--straggler-threshold", options->straggler_threshold,
                  "report a rank whose compute against the plan's is this many times its peers' median in each of "
                  "--straggler-window steps (0 = off)")
      ->capture_default_str();
  cmd->add_option("--straggler-window", options->straggler_window, "consecutive steps of the straggler check")
      ->capture_default_str();
  cmd->add_flag("--stop-on-straggler", options->stop_on_straggler,
                "on a straggler, checkpoint the step (with --checkpoint-dir) and stop (pipewright elastic "
                "--replan-stragglers then drops its slot)");
  cmd->add_option("--fault-rank", options->fault_rank, "TEST ONLY: this rank kills/stops itself mid-step")->group("");
  cmd->add_option("--fault-step", options->fault_step, "TEST ONLY: step of --fault-rank")->group("");
  cmd->add_option("--fault-kind", options->fault_kind,
                  "TEST ONLY: kill (SIGKILL), hang (SIGSTOP) or checkpoint (SIGKILL after the first layer file of "
                  "the checkpoint of step --fault-step + 1)")
      ->check(CLI::IsMember({"kill", "hang", "checkpoint"}))
      ->group("");
  cmd->add_option("--slow-rank", options->slow_rank, "TEST ONLY: this rank sleeps in every compute action")->group("");
  cmd->add_option("--slow-ms", options->slow_ms, "TEST ONLY: milliseconds of --slow-rank's sleep")->group("");
  cmd->callback([options, watchdog_s, comm_kind, &ctx] { RunRun(*options, *watchdog_s, *comm_kind, ctx); });
}

}  // namespace pw::cli
