// The data-parallel cost model: how long each stage's gradient reduction
// (REDUCE_GRAD) takes over its D data-parallel ranks, and what data
// parallelism changes in a stage's memory (docs/ALGORITHMS.md, "Data
// parallelism"). Torch-free; used by the planner's candidate search.
//
// Ring collectives over D ranks, n bytes, link bandwidth bw (one direction,
// per rank) and per-collective latency a (Patarasuk & Yuan 2009,
// "Bandwidth optimal all-reduce algorithms for clusters of workstations";
// NCCL's "bus bandwidth",
// https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
//   all-reduce      2 (D-1)/D x n / bw + a
//   reduce-scatter    (D-1)/D x n / bw + a
//   all-gather        (D-1)/D x n / bw + a   (n = the whole gathered size)
// Plain data parallelism all-reduces a stage's gradients in buckets of at
// most kDataParallelBucketBytes (PyTorch DDP's bucket_cap_mb = 25, the
// executor's bucket size), each paying the latency once. ZeRO-1 (Rajbhandari
// et al. 2020, stage 1; Megatron's --use-distributed-optimizer) reduce-
// scatters the stage's gradients and all-gathers its updated parameters, one
// collective each (the executor's order).
#pragma once

#include <cstdint>

#include "base/costs.h"
#include "models/spec/footprint.h"

namespace pw {

// Bucket size of a plain all-reduce, bytes (PyTorch DDP's default 25 MiB).
inline constexpr int64_t kDataParallelBucketBytes = int64_t{25} << 20;

// Seconds of a ring all-reduce of `bytes` over `dp_size` ranks on `link`:
// 2(D-1)/D x bytes / bandwidth + latency; 0 for D = 1 or 0 bytes.
double RingAllReduceSeconds(int64_t bytes, int dp_size, const CommModel& link);
// Seconds of a ring reduce-scatter (or all-gather) of `bytes` in total:
// (D-1)/D x bytes / bandwidth + latency; 0 for D = 1 or 0 bytes.
double RingReduceScatterSeconds(int64_t bytes, int dp_size, const CommModel& link);
// All-reduce of `bytes` cut into ceil(bytes / bucket_bytes) buckets (the
// last one partial), one after the other: the bandwidth term of the whole
// plus one latency per bucket. REQUIRES: bucket_bytes >= 1.
double BucketedAllReduceSeconds(int64_t bytes, int dp_size, const CommModel& link,
                                int64_t bucket_bytes = kDataParallelBucketBytes);

// Bytes per parameter of each kind of static state under a precision (the
// split of StaticBytesPerParam): the gradient the reduction moves, the
// parameter ZeRO-1 all-gathers, and the optimizer state ZeRO-1 shards.
// bf16 (Megatron mixed precision): grad 4 (fp32 main grad), param 2, optimizer
// 12 (fp32 master copy + AdamW m + v); fp32: 4, 4, 8; fp64: 8, 8, 16.
struct ParamBytes {
  int64_t grad = 4;
  int64_t param = 4;
  int64_t optimizer = 8;
  int64_t Total() const { return grad + param + optimizer; }
};
ParamBytes BytesPerParam(Precision precision);

// What the planner models of data parallelism for one candidate.
struct DataParallelSpec {
  int dp_size = 1;                     // D
  bool distributed_optimizer = false;  // ZeRO-1
  CommModel link;                      // DeviceSpec::DataParallelLink(D)
  Precision precision = Precision::kMixedBf16;
  int64_t bucket_bytes = kDataParallelBucketBytes;
};

// Seconds of the REDUCE_GRAD of a stage holding `params` parameters: the
// bucketed all-reduce of params x grad bytes, or with ZeRO-1 the
// reduce-scatter of the gradients plus the all-gather of params x param
// bytes. 0 when D = 1.
double StageReduceSeconds(int64_t params, const DataParallelSpec& dp);

// Static bytes (params + grads + optimizer) of `params` parameters: with
// ZeRO-1 each rank keeps 1/D of the optimizer state, rounded up (bf16:
// 6 + 12/D bytes per parameter, Megatron's distributed-optimizer count).
int64_t StaticBytesOfParams(int64_t params, const DataParallelSpec& dp);

// The flat buffer the executor copies a stage's gradients into when its
// REDUCE_GRAD starts (params x grad bytes), held until the optimizer step at
// the end of the step; 0 when D = 1.
int64_t ReduceBufferBytes(int64_t params, const DataParallelSpec& dp);

}  // namespace pw
