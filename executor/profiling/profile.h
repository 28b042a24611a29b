// Measurement side of `pipewright profile` (the planner fits what it measures:
// models/spec/profile_samples.h):
//  - MeasureLayers runs each layer kind of a GPT (embedding, block, head +
//    loss) through F, I, W and B with LibTorch on this machine, for several
//    micro-batch sizes and sequence lengths (warm-up, repetitions, median),
//    and measures with the tracking CPU allocator (executor/runtime/cpu_allocator.h) the bytes held from the end
//    of F to the end of I and from the end of I to the end of W;
//  - MeasureP2P times a ping-pong between rank 0 and rank 1 of a
//    Communicator for several message sizes.
// Torch-free header; the implementation (profile.cc) is a LibTorch unit,
// except MeasureP2P (profile_comm.cc, torch-free).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "executor/comm/communicator.h"
#include "models/spec/profile_samples.h"

namespace pw::exec {

struct LayerProfileOptions {
  nlohmann::json model;  // HF config object (models/spec/model_config.h ParseModelConfig)
  std::vector<int> micro_batch_sizes{1, 2, 4};
  std::vector<int> seq_lengths{32, 64};  // each <= n_positions
  int warmup = 2;                        // untimed rounds per shape
  int repetitions = 7;                   // timed rounds; the median over all their microbatches is kept
  int in_flight = 4;                     // microbatches per round, alive at once (as in a pipeline step)
  int threads = 1;                       // LibTorch intra-op threads (the executor uses 1 per rank)
  bool double_precision = false;         // float64 instead of float32
  uint64_t seed = 1234;
  // Ranks measuring at once: null = this process alone. Otherwise every rank
  // of `comm` calls MeasureLayers with the same options; the ranks run each
  // round at the same time (a gather of their status between rounds keeps
  // them aligned and stops all of them if one fails) and every rank returns
  // the medians of all ranks' samples pooled. A pipeline step keeps every
  // rank computing at once; on a CPU host they share the last-level cache and
  // memory bandwidth (on the 2-core CI machine a GPT block's F and B run
  // 10-15 % slower with both cores busy than alone), so this is how a profile
  // sees the speed a rank has inside a run.
  Communicator* comm = nullptr;
  // Tensor parallelism (`profile --tp T`): the comm's T ranks are one TP
  // group and every layer is measured as a TP rank's shard (Megatron's
  // layers, models/torch/tensor_parallel.h), its collectives over the group
  // inside F / I / B, sequence parallel when `sequence_parallel`. Requires
  // comm->size() == tp_size.
  int tp_size = 1;
  bool sequence_parallel = true;
};

struct LayerMeasurements {
  std::vector<ProfileSample> samples;           // one per (kind, b, s)
  std::map<std::string, int64_t> static_bytes;  // per kind: params + grads + AdamW state, measured
  // Per kind: seconds of one optimizer step over the layer's parameters
  // (zeroing, TP partial-gradient sum, AdamW; median of `repetitions`).
  std::map<std::string, double> optimizer_s;
  int64_t element_bytes = 4;
};

// Measures every kind at every (b, s) of `options`; prints one line per
// sample to `log` (may be null). Each round runs `in_flight` microbatches
// through one layer as a pipeline rank does (F x k, I x k, W x k; then
// F x k, B x k), rounds go round-robin over all (kind, shape) pairs, and
// times are medians over the microbatches of `repetitions` timed rounds;
// B is the full (unsplit) backward, I the
// input-gradient backward with the weight GEMMs deferred exactly as the
// executor does, W the deferred weight gradients. Bytes (counting allocator):
// activation = held after F (incl. the output) until I; wstash = held after I
// until W, excluding the input gradient that is sent away.
// With options.comm, collective over its ranks (see LayerProfileOptions::comm).
// Errors: InvalidArgument naming the option (empty shape lists, a sequence
// length above n_positions, warm-up < 0, repetitions < 1, in_flight < 1, bad model
// config);
// ComputeError from LibTorch with the kind and shape (with comm: naming the
// rank it happened on, returned on every rank); comm errors.
StatusOr<LayerMeasurements> MeasureLayers(const LayerProfileOptions& options, std::FILE* log);

// One-way point-to-point time between rank 0 and rank 1 for each size in
// `bytes`: median over `repetitions` of a ping-pong round trip, halved, after
// `warmup` untimed round trips. Collective: ranks >= 2 only take part in the
// barriers. Returns the samples on every rank (rank 0's timings).
// Errors: InvalidArgument if comm.size() < 2; comm errors naming the rank.
StatusOr<std::vector<CommSample>> MeasureP2P(Communicator& comm, const std::vector<int64_t>& bytes, int warmup,
                                             int repetitions);

// The collectives of a tensor-parallel group of comm.size() ranks (Megatron
// TP's all-reduce; sequence parallelism's reduce-scatter and all-gather),
// for each whole-tensor size in `bytes` (float32 elements, bytes / 4 of
// them; reduce-scatter and all-gather move a 1/size() block per rank):
// after `warmup` untimed rounds, `repetitions` rounds each started together
// (a barrier) and timed on every rank from post to completion; the round's
// time is the slowest rank's, the sample its median. Collective over `comm`.
// Returns the samples on every rank. Errors: InvalidArgument if comm.size()
// < 2 or a size is not a multiple of 4 * comm.size() bytes; comm errors.
StatusOr<std::vector<CollectiveSample>> MeasureCollectives(Communicator& comm, const std::vector<int64_t>& bytes,
                                                           int warmup, int repetitions);

}  // namespace pw::exec
