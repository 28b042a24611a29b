// `pipewright run`: trains a model by replaying a plan on every rank, and
// `pipewright generate`: samples text from the stages it saved. Torch-free
// header; the CLI calls these.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "executor/communicator.h"
#include "executor/engine.h"
#include "schedules/status.h"

namespace pw::exec {

struct RunOptions {
  std::string plan_path;        // --plan: plan JSON (PLAN_FORMAT.md) with extra model/training fields
  std::string data_path;        // --data: any text file; bytes are tokens
  int steps = 50;               // --steps: optimizer steps
  uint64_t seed = 1234;         // --seed: data order and initial weights
  double lr = 3e-3;             // --lr: peak AdamW learning rate
  int warmup_steps = 5;         // --warmup-steps: linear warm-up to --lr, then cosine decay to --lr/10
  double beta2 = 0.95;          // --adam-beta2 (GPT practice; 0.999 is PyTorch's default)
  double weight_decay = 0.0;    // --weight-decay
  bool double_precision = false;  // --dtype float64
  int log_every = 1;            // --log-every: rank 0 prints every k-th step (and the last)
  std::string save_dir;         // --save: write stage_<s>.pt here after training ("" = no)
  int sample_tokens = 0;        // --sample N: after training, rank 0 prints N sampled bytes
  std::string sample_prompt = "\n";  // --prompt
  double temperature = 0.8;     // --temperature
};

// Summary of a run, as rank 0 saw it.
struct RunSummary {
  double first_loss = 0.0, last_loss = 0.0;
  double mean_step_s = 0.0;       // over steps after the first (warm-up excluded when > 1 step)
  double mean_tokens_per_s = 0.0;
  double mean_bubble_ratio = 0.0;
  std::string sample;             // rank 0 only, if asked
};

// Runs on every rank with `comm` (world = plan's pp_size). Reads the plan and
// data, agrees on the plan across ranks, pre-flight checks it, trains, and
// prints one line per step on rank 0 to `out`:
//   step 3/50 | loss 4.1234 | 5120 tok/s | step 0.400 s | bubble 0.213
// Errors: any rank's failure (file, plan, pre-flight, compute, comm) naming
// the rank; the plan and pre-flight errors are the same on every rank.
StatusOr<RunSummary> RunTraining(const RunOptions& options, Communicator& comm, std::FILE* out);

}  // namespace pw::exec
