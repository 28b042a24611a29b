// What `pipewright profile` measures (executor/profiling/profile.h) and the
// planner fits (planner/profile_fit.h): one layer kind's costs at one shape,
// and one point-to-point message size's time. Plain values, so that the
// executor and the planner share them without depending on each other.
#pragma once

#include <cstdint>
#include <string>

#include "base/costs.h"

namespace pw {

// Measured costs of one layer kind at one shape (times: median seconds).
struct ProfileSample {
  std::string kind;  // "embedding", "block" or "head"
  int64_t micro_batch_size = 0;
  int64_t seq_length = 0;
  double f = 0, i = 0, w = 0, b = 0;  // seconds per microbatch; b = the full (unsplit) backward
  int64_t activation_bytes = 0;       // held from end of F to end of I (PLAN_FORMAT rule 7)
  int64_t wstash_bytes = 0;           // held from end of I to end of W
  int64_t output_bytes = 0;           // forward output message
};

// One measured collective over a group of `ranks` ranks (the tensor-parallel
// group's all-reduce, reduce-scatter and all-gather; footprint.h
// Collective): `bytes` is the whole (unsharded) tensor, `seconds` the
// median time from posting the collective to its completion on the slowest
// rank (every rank starts together after a barrier).
struct CollectiveSample {
  std::string kind;  // "all-reduce", "reduce-scatter" or "all-gather" (CollectiveKindName)
  int ranks = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

// The fit of one collective kind over `ranks` ranks (least squares on its
// samples): seconds = model.latency_s + bytes / model.bandwidth_bytes_per_s
// for the whole collective of a `bytes`-byte tensor (not a ring model: the
// measured time as it is). What the planner's TensorParallelSeconds uses
// instead of the device's link when a profile has it.
struct CollectiveFit {
  std::string kind;  // "all-reduce", "reduce-scatter", "all-gather"
  int ranks = 0;
  CommModel model;
};

// One measured point-to-point ping-pong size.
struct CommSample {
  int64_t bytes = 0;
  double seconds = 0;  // one-way time: median round trip / 2
};

}  // namespace pw
