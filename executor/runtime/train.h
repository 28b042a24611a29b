// `pipewright run`: trains a model by replaying a plan on every rank, and
// `pipewright generate`: samples text from the stages it saved. Torch-free
// header; the CLI calls these.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"
#include "executor/comm/communicator.h"
#include "executor/runtime/types.h"

namespace pw::exec {

class WaitBoard;

// Progress lines a run prints at most (+ the last step's) unless --log-every
// is given.
inline constexpr int kProgressLines = 40;

struct RunOptions {
  std::string plan_path;    // --plan: plan JSON (docs/PLAN_FORMAT.md) with extra model/training fields
  std::string data_path;    // --data: text (bytes, or --tokenizer) or token file (executor/data/data.h, docs/DATA.md)
  std::string token_dtype;  // --token-dtype: "" | uint16 | uint32 (flat token file without a header)
  std::string tokenizer;    // --tokenizer: SentencePiece .model for text data and --sample ("" = bytes)
  std::string data_order = "random";  // --data-order: random | sequential
  int steps = 50;                     // --steps: optimizer steps
  uint64_t seed = 1234;               // --seed: data order and initial weights
  double lr = 3e-3;                   // --lr: peak AdamW learning rate
  int warmup_steps = 5;               // --warmup-steps: linear warm-up to --lr, then cosine decay to --lr/10
  double beta2 = 0.95;                // --adam-beta2 (GPT practice; 0.999 is PyTorch's default)
  double weight_decay = 0.0;          // --weight-decay
  // --dtype: "" = the plan's training.dtype (what run trains); "fp32" or
  // "fp64" (launch/flags.h) must be the plan's, whose message and memory
  // sizes follow it.
  std::string dtype;
  // --log-every: rank 0 prints every k-th step (and the last); 0 = every
  // ceil(steps run / kProgressLines) steps, so a run of any length prints
  // at most kProgressLines + 1 progress lines (every step when it runs fewer).
  int log_every = 0;
  std::string save_dir;              // --save: write the final checkpoint here (checkpoint.h; "" = no)
  int sample_tokens = 0;             // --sample N: after training, rank 0 prints N sampled bytes
  std::string sample_prompt = "\n";  // --prompt
  double temperature = 0.8;          // --temperature
  // Long runs.
  std::string checkpoint_dir;    // --checkpoint-dir: ROOT of step_<n>/ checkpoints (checkpoint.h)
  int checkpoint_every = 0;      // --checkpoint-every N: save after every N-th step (0: once after the last step when
                                 // --checkpoint-dir is given)
  std::string resume;            // --resume: a step_<n> directory or a ROOT (latest complete one)
  std::string init_from;         // --init-from: a Hugging Face directory (config.json + safetensors) to start from
  double clip_grad_norm = -1;    // --clip-grad-norm: <0 = the plan's training.clip_grad_norm, 0 = off
  std::string trace_path;        // --trace FILE: measured trace of one step (trace_format.h)
  int trace_step = -1;           // --trace-step: which step (0-based) to write; -1 = the last
  std::string device = "cpu";    // --device cpu|cuda
  bool device_messages = false;  // --comm nccl: messages stay on the GPU (set by the CLI)
  int local_rank = 0;            // from the launcher (launch_env.h), picks the CUDA device
  WaitBoard* board = nullptr;    // what this rank waits on (watchdog.h); may be null
  // Test-only fault injection (--fault-rank/--fault-step/--fault-kind): rank
  // fault_rank, in step fault_step, half-way through its action list, kills
  // itself (SIGKILL, "kill") or stops (SIGSTOP, "hang"). -1 = off.
  // "checkpoint": rank fault_rank kills itself (SIGKILL) right after the
  // first layer file it writes into the checkpoint of step fault_step + 1
  // (the manifest is then never written: the checkpoint stays incomplete).
  int fault_rank = -1;
  int fault_step = 0;
  std::string fault_kind = "kill";
  // Stragglers (straggler.h, docs/ELASTIC.md): --straggler-threshold (0 =
  // off, else > 1), --straggler-window (steps, >= 1); rank 0 prints a
  // "straggler: ..." line when one is found and the run's summary lists them.
  // --stop-on-straggler (what `elastic --replan-stragglers` passes): then
  // every rank writes a checkpoint of the step (with --checkpoint-dir) and
  // the run stops with IsStragglerStop's error.
  double straggler_threshold = 1.3;
  int straggler_window = 4;
  bool stop_on_straggler = false;
  // Test-only straggler drill (--slow-rank R --slow-ms MS): rank R sleeps MS
  // milliseconds inside each compute action (it counts as compute). -1 = off.
  int slow_rank = -1;
  double slow_ms = 0.0;
};

// Summary of a run, as rank 0 saw it.
struct RunSummary {
  double first_loss = 0.0, last_loss = 0.0;
  double mean_step_s = 0.0;  // over steps after the first (warm-up excluded when > 1 step)
  double mean_tokens_per_s = 0.0;
  double mean_bubble_ratio = 0.0;
  double mean_reduce_wait_s =
      0.0;  // dp_size > 1: the all-reduce's exposed seconds per step (StepReport::reduce_wait_s)
  // tp_size > 1: seconds per step in tensor-parallel collectives
  // (StepReport::tp_collective_s).
  double mean_tp_collective_s = 0.0;
  // Model FLOPs utilisation at the mean step (a fraction): model FLOP/s per
  // rank (recomputation not counted) over the plan's device peak_flops; 0
  // when the plan has no device.
  double mean_mfu = 0.0;
  std::string sample;  // rank 0 only, if asked
  int first_step = 0;  // 0, or the resumed checkpoint's steps_done
  int checkpoints_written = 0;
  double mean_checkpoint_s = 0.0;       // max over ranks of one checkpoint's write time, averaged
  int64_t checkpoint_bytes = 0;         // bytes of the last checkpoint (all rank files)
  std::vector<std::string> stragglers;  // DescribeStraggler of each straggler found (straggler.h)
};

// Runs on every rank with `comm` (world = plan's pp_size x dp_size; each
// replica trains on its rows of every global batch). Reads the plan and
// data, agrees on the plan across ranks, pre-flight checks it, trains, and
// prints one line per --log-every steps on rank 0 to `out`:
//   step 3/50 | loss 4.1234 | 5120 tok/s | step 0.400 s | bubble 0.213 |
//   1.2 GFLOP/s/rank | MFU 1.25 % | elapsed 1.3 s | ETA 19.0 s
// (model FLOP/s per rank from the plan's model and batch, models/spec
// footprint: forward + both backward passes, recomputation not counted; MFU
// divides it by the plan's device peak_flops and is left out when the plan
// has no device), then a summary with the measured step, bubble and MFU
// beside the plan's predictions.
// Errors: any rank's failure (file, plan, pre-flight, compute, comm) naming
// the rank; the plan and pre-flight errors are the same on every rank, and so
// are the refusals of --resume (another model, dtype, seed or batch shape;
// InvalidArgument; another plan is fine: checkpoints are keyed by layer)
// and of --clip-grad-norm on a plan without a global barrier.
StatusOr<RunSummary> RunTraining(const RunOptions& options, Communicator& comm, std::FILE* out);

// The checks of the options alone (no files, no peers): InvalidArgument naming
// the flag and its value (--lr, --adam-beta2, --weight-decay, --clip-grad-norm,
// --temperature, --sample, --steps, --trace-step, --warmup-steps,
// --checkpoint-every, --log-every; --init-from with --resume). Every rank has the same options, so every
// rank refuses alike before any collective; RunTraining calls it first.
Status ValidateRunOptions(const RunOptions& options);

// True for RunTraining's refusal of a non-finite loss: the loss is summed over
// all ranks in every step, so every rank returns this error at the same step
// (no rank is left waiting; the launcher need not abort the job).
bool IsNonFiniteLoss(const Status& status);

// True for RunTraining's stop on a straggler (--stop-on-straggler): decided
// from all-gathered step times, so every rank returns it after the same step
// (and after the same checkpoint).
bool IsStragglerStop(const Status& status);

}  // namespace pw::exec
