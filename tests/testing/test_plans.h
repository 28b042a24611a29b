// Executable plans for the executor's tests and benches (test code, target
// pw_test_plans; no production code links it), made by the planner
// (planner/planner.h: SearchPlans + BuildPlan) for one fixed candidate on a
// fixed CPU device (TestCpuDevice): the same cost derivation (models/spec),
// the same search with the same dp_size and the same plan writer as
// `pipewright plan`, so a data-parallel plan's `predicted` block and
// REDUCE_GRAD costs are the planner's. Torch-free.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/spec/device.h"
#include "plan/plan.h"

namespace pw::exec {

// The device test plans are made for: one CPU core with fixed numbers (96
// GFLOP/s peak at efficiency 0.05, 4 GiB, 5 GB/s and 20 us links), so that the
// lowered orders the executor tests expect do not move when the shipped
// `cpu-core` file is recalibrated.
DeviceSpec TestCpuDevice();

// One fixed candidate: what `pipewright plan --schedule S --pp P
// --num-microbatches M [--layers-per-stage ...] --dtype fp32|fp64
// --recompute-granularity none --device <TestCpuDevice>` would write.
struct PlanSpec {
  std::string schedule = "1f1b";  // canonical schedule name
  int pp_size = 2;                // P
  int num_microbatches = 4;       // m
  int virtual_stages = 0;         // v; 0 = the family default
  // HF config object. What the executor builds is filled in when absent:
  // vocab_size 256 (byte tokens), tie_word_embeddings false, no dropout.
  nlohmann::json model;
  int seq_length = 16;  // T
  // Rows of each microbatch (size m): as even as possible, larger first
  // (the planner's unequal split of a global batch). Empty =
  // micro_batch_size for each.
  std::vector<int> microbatch_sizes;
  int micro_batch_size = 1;
  // Layers per stage (size S, sum N+2, each >= 1). Empty = the planner's
  // time-balanced partition.
  std::vector<int> layers_per_stage;
  int bytes_per_element = 4;  // 4 = fp32 plan, 8 = fp64 plan (training.dtype)
  // > 0: the run clips by the global gradient norm; recorded as
  // training.clip_grad_norm with training.global_barrier = true.
  double clip_grad_norm = 0.0;
  // Data-parallel replicas D (world = pp_size x D), planned as `pipewright
  // plan --dp D`: the plan's microbatches are one replica's;
  // training.global_batch_size = D x their sum; each stage's list holds its
  // <s>REDUCE_GRAD, placed and timed by the planner.
  int dp_size = 1;
  // ZeRO-1 (training.distributed_optimizer); only with dp_size > 1.
  bool distributed_optimizer = false;
  // Tensor-parallel ranks T (world = tp_size x pp_size x D), planned as
  // `pipewright plan --tp T`, and --sequence-parallel (only with T > 1).
  int tp_size = 1;
  bool sequence_parallel = false;
};

// Errors: the planner's (InvalidArgument naming the flag, Infeasible with the
// rejection), and InvalidArgument when microbatch_sizes is not the planner's
// even split of its sum, or dp_size < 1.
StatusOr<Plan> BuildPlan(const PlanSpec& spec);

}  // namespace pw::exec
