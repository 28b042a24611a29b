// Per-stage costs and message model: what the simulator and the cost-aware
// generators need to know about a model split into stages (docs/PLAN_FORMAT.md,
// `stages[].cost_s`, `stages[].memory_bytes`, `comm`).
#pragma once

#include <cstdint>
#include <vector>

namespace pw {

// Durations of one microbatch on one stage, in seconds.
struct StageCost {
  double f = 1.0;   // forward
  double i = 1.0;   // input-gradient backward
  double w = 1.0;   // weight-gradient backward
  double b = -1.0;  // full backward; < 0 means "i + w" (PLAN_FORMAT: B = I + W unless given)
  // Data-parallel gradient reduction of the stage once per step (REDUCE_GRAD):
  // all-reduce, or reduce-scatter + all-gather with ZeRO-1; 0 when dp_size 1.
  double reduce_grad = 0.0;
  // The optimizer step over the stage's parameters, once per step, after the
  // stage's last action and its REDUCE_GRAD (AdamW with the gradient zeroing
  // of the next step; under tensor parallelism also the all-reduce of the
  // replicated parameters' partial gradients). 0 = not modelled (layer-cost
  // files and device costs leave it out; `pipewright profile` measures it).
  double optimizer = 0.0;
  // "F&B" of DualPipe (DeepSeek-V3 report, Table 2): one overlapped pair
  // (OVERLAP_F_B) whose F half is this stage's forward and whose B half is
  // the full backward of another stage `other` of the same rank; < 0 means
  // no overlap gain, f + other.B(). Plan files give it as cost_s "F&B".
  double overlap_fb = -1.0;
  double B() const { return b >= 0 ? b : i + w; }
  double OverlapFB(const StageCost& other) const { return overlap_fb >= 0 ? overlap_fb : f + other.B(); }
};

// Memory of one stage, in bytes (docs/PLAN_FORMAT.md rule 7).
struct StageMemory {
  int64_t static_bytes = 0;   // params + grads + optimizer state, held all step
  int64_t activation = 1;     // held from end of F until end of I (or B)
  int64_t wstash = 1;         // held from end of I until end of W
  int64_t send_forward = 0;   // bytes of the forward message to stage s+1
  int64_t send_backward = 0;  // bytes of the backward message to stage s-1
  // Flat gradient buffer the stage's REDUCE_GRAD allocates (data parallel):
  // held from the REDUCE_GRAD until the optimizer step ends the step.
  int64_t reduce_buffer = 0;
};

// A message of b bytes between two ranks takes latency_s + b / bandwidth.
struct CommModel {
  double latency_s = 0.0;
  double bandwidth_bytes_per_s = 0.0;  // <= 0 means infinite
  double MessageSeconds(int64_t bytes) const {
    return latency_s + (bandwidth_bytes_per_s > 0 ? static_cast<double>(bytes) / bandwidth_bytes_per_s : 0.0);
  }
};

// Everything the simulator needs besides the program. `stages` and `memory`
// have one entry per global stage.
struct StageCosts {
  std::vector<StageCost> stages;
  std::vector<StageMemory> memory;
  CommModel comm;
};

// Every one of `num_stages` stages gets `cost` and `memory`; comm as given.
StageCosts UniformCosts(int num_stages, StageCost cost = {}, StageMemory memory = {}, CommModel comm = {});

}  // namespace pw
