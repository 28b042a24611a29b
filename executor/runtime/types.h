// The executor's value types: what a run is configured with (EngineOptions)
// and what a step reports (StepReport, ReduceSpan, StashReport, parameter
// counts, tensors copied out as doubles). Plain structs, torch-free; every
// part of the runtime (engine, data-parallel sync, the training loop, the
// torch helpers) and the tests read them from here, so no file has to include
// the engine for its types.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "executor/runtime/interpreter.h"

namespace pw::exec {

struct EngineOptions {
  // Parameter and activation dtype: float64 (equivalence tests) or float32.
  bool double_precision = false;
  // Initial weights depend only on (init_seed, layer index): every placement
  // of the same model starts from the same parameters.
  uint64_t init_seed = 1234;
  // False when every parameter is overwritten before the first step
  // (--init-from, --resume): construction then skips the random fill
  // (models::ParamInit::Overwritten), which changes no result and only
  // shortens the start.
  bool random_init = true;
  // AdamW (per stage; decoupled weight decay on every parameter).
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  // LibTorch intra-op threads for this process; 0 = leave the default.
  // Several ranks on few cores want 1.
  int intra_op_threads = 1;
  // Clip gradients by their global L2 norm over every rank's parameters (an
  // all-gather per step: a global barrier, so the plan should have been made
  // for makespan_s, PLAN_FORMAT rule 9). 0 = no clipping.
  double clip_grad_norm = 0.0;
  // "cpu" or "cuda" (the device of local_rank % device_count). "cuda" is
  // refused with a reason when this LibTorch has no usable CUDA device.
  std::string device = "cpu";
  int local_rank = 0;
  // Messages live on the compute device (NCCL) instead of host buffers
  // (MPI-staged). REQUIRES device "cuda".
  bool device_messages = false;
  // Data parallel: test the reductions in flight after every compute action
  // (DataParallelSync::Progress), so that Open MPI's non-blocking
  // collectives advance while the rank computes. false: they advance only
  // inside other MPI calls (bench/dp_bench.cc --no-progress measures both).
  bool dp_progress = true;
  // Test-only (run's --fault-kind checkpoint drill): called after each layer
  // file a rank writes into a checkpoint directory, with the directory and
  // the file's name; empty = nothing.
  std::function<void(const std::string& step_dir, const std::string& file)> after_checkpoint_file;
};

// One stage's data-parallel gradient reduction in a step, in seconds from
// the step's start (Engine::Step's barrier): posted at REDUCE_GRAD, and its
// completion as first observed (a Test after a compute action, or the wait
// before the optimizer step).
struct ReduceSpan {
  int stage = 0;
  double start_s = 0.0, end_s = 0.0;
};

// A tensor copied out as doubles, for comparisons without LibTorch.
struct NamedValues {
  std::string name;  // e.g. "block.3.attn_qkv.weight"
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major
};

struct StepReport {
  double loss = 0.0;          // global batch's mean cross-entropy (nats/token), same on every rank
  // Max over ranks (all replicas): barrier -> optimizer step done; the
  // measured makespan (PLAN_FORMAT rules 8, 11).
  double step_s = 0.0;
  // Max over ranks: the pipeline alone, from the start of the rank's action
  // list to its last action (and its sends) done; benches compare it with
  // the simulated step of plans without optimizer costs.
  double actions_end_s = 0.0;
  // Sum over the ranks of a pipeline of F/B/I/W seconds plus each rank's
  // optimizer-step compute (zeroing, TP partial sums, AdamW; rule 11), mean
  // over the replicas and TP ranks.
  double busy_s = 0.0;
  double bubble_ratio = 0.0;  // 1 - busy / (P * step_s), PLAN_FORMAT rule 8, measured
  // tp_size > 1: mean over the ranks of the seconds spent in tensor-parallel
  // collectives this step (CollectiveSeconds: transfer + waiting for the
  // peers; inside F / I / B and the optimizer step's partial sums). 0 else.
  double tp_collective_s = 0.0;
  double wait_s = 0.0;        // this rank's seconds blocked in receives
  // Per world rank (index = rank): its F/B/I/W and optimizer-step seconds in
  // this step (the straggler check compares them with the plan's busy_s,
  // straggler.h).
  std::vector<double> rank_busy_s;
  int64_t tokens = 0;      // rows * seq_length of the global batch (all replicas)
  double grad_norm = 0.0;  // global L2 norm before clipping (0 unless clip_grad_norm > 0)
  // dp_size > 1: max over ranks of the seconds blocked waiting for the
  // data-parallel gradient reduction after the last action (the all-reduce's
  // exposed time; the rest overlapped compute). 0 with dp_size 1.
  double reduce_wait_s = 0.0;
  std::vector<ReduceSpan> reduce_spans;  // this rank's stages, in start order (data parallel only)
  std::vector<ActionSpan> spans;         // this rank's measured actions (hooks->record_spans)
};

// Deferred weight-gradient memory of the last step, per stage of this rank.
struct StashReport {
  int stage = 0;
  int64_t measured_bytes = 0;   // max over full-size microbatches of bytes held after I
  int64_t predicted_bytes = 0;  // plan stages[].memory_bytes.wstash
};

// The parameters one stage of this rank holds, counted from its tensors.
struct StageParameterBytes {
  int stage = 0;
  int64_t numel = 0;  // elements of every parameter tensor of the stage
  int64_t bytes = 0;  // numel x element size (4 for float32, 8 for float64)
};

}  // namespace pw::exec
