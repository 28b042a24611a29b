// ResolveBatch (declared in planner/planner.h): the batch flags
// (--global-batch-size, --micro-batch-size, --num-microbatches) into the
// microbatch splits the planner searches. Megatron's rule: m = global / micro,
// asserted divisible; unequal microbatches only when the flags ask for them.
#include <string>
#include <vector>

#include "base/limits.h"
#include "planner/planner.h"

namespace pw {

namespace {

// The splits of one replica's batch (o.global_batch_size already divided by
// the data-parallel size).
StatusOr<std::vector<BatchSplit>> ResolveReplicaBatch(const PlannerOptions& o) {
  auto equal = [](int64_t b, int m) {
    BatchSplit s;
    s.micro_batch_size = b;
    s.num_microbatches = m;
    s.global_batch_size = b * m;
    s.microbatch_sizes.assign(m, b);
    return s;
  };
  if (o.micro_batch_size && *o.micro_batch_size < 1)
    return Status::InvalidArgument("--micro-batch-size must be >= 1, got " + std::to_string(*o.micro_batch_size));
  if (o.num_microbatches && *o.num_microbatches < 1)
    return Status::InvalidArgument("--num-microbatches must be >= 1, got " + std::to_string(*o.num_microbatches));
  if (o.global_batch_size && *o.global_batch_size < 1)
    return Status::InvalidArgument("--global-batch-size must be >= 1, got " + std::to_string(*o.global_batch_size));
  if (o.global_batch_size)
    PW_RETURN_IF_ERROR(limits::CheckRange("--global-batch-size", *o.global_batch_size, limits::kMaxGlobalBatch,
                                          "sequences per step: a batch given in tokens is --seq-length times this"));
  if (o.num_microbatches)
    PW_RETURN_IF_ERROR(limits::CheckRange("--num-microbatches", *o.num_microbatches, limits::kMaxMicrobatches,
                                          "microbatches per step"));
  if (!o.global_batch_size && !o.num_microbatches)
    return Status::InvalidArgument(
        "give --global-batch-size (with or without --micro-batch-size) or --num-microbatches");
  if (!o.global_batch_size) return std::vector<BatchSplit>{equal(o.micro_batch_size.value_or(1), *o.num_microbatches)};
  const int64_t G = *o.global_batch_size;
  if (o.num_microbatches) {
    const int m = *o.num_microbatches;
    if (G < m)
      return Status::InvalidArgument("--global-batch-size " + std::to_string(G) +
                                     " is smaller than --num-microbatches " + std::to_string(m) +
                                     ": a microbatch cannot be empty");
    if (G % m == 0) {
      if (o.micro_batch_size && *o.micro_batch_size * m != G)
        return Status::InvalidArgument("--global-batch-size " + std::to_string(G) + " != --micro-batch-size " +
                                       std::to_string(*o.micro_batch_size) + " x --num-microbatches " +
                                       std::to_string(m));
      return std::vector<BatchSplit>{equal(G / m, m)};
    }
    if (o.micro_batch_size)
      return Status::InvalidArgument("--global-batch-size " + std::to_string(G) + " is not --micro-batch-size " +
                                     std::to_string(*o.micro_batch_size) + " x --num-microbatches " +
                                     std::to_string(m) + "; drop --micro-batch-size to allow unequal microbatches");
    // Unequal microbatches: G = q m + r; the first r take q + 1 sequences.
    BatchSplit s;
    s.num_microbatches = m;
    s.global_batch_size = G;
    for (int k = 0; k < m; ++k) s.microbatch_sizes.push_back(G / m + (k < G % m ? 1 : 0));
    s.micro_batch_size = s.microbatch_sizes.front();
    return std::vector<BatchSplit>{s};
  }
  if (o.micro_batch_size) {
    const int64_t b = *o.micro_batch_size;
    if (G % b != 0) {
      int64_t lo = G / b * b, hi = lo + b;
      return Status::InvalidArgument("--global-batch-size " + std::to_string(G) +
                                     " is not divisible by --micro-batch-size " + std::to_string(b) +
                                     " (Megatron asserts the same); use --global-batch-size " +
                                     (lo > 0 ? std::to_string(lo) + " or " : std::string()) + std::to_string(hi) +
                                     ", or --num-microbatches for unequal microbatches");
    }
    PW_RETURN_IF_ERROR(limits::CheckRange("--global-batch-size / --micro-batch-size = m", G / b,
                                          limits::kMaxMicrobatches, "microbatches per step"));
    return std::vector<BatchSplit>{equal(b, static_cast<int>(G / b))};
  }
  std::vector<BatchSplit> out;
  for (int64_t b : {1, 2, 4, 8})
    if (G % b == 0 && G / b <= limits::kMaxMicrobatches) out.push_back(equal(b, static_cast<int>(G / b)));
  if (out.empty() && G / 8 > limits::kMaxMicrobatches)
    return Status::InvalidArgument("--global-batch-size " + std::to_string(G) + " needs more than the limit of " +
                                   std::to_string(limits::kMaxMicrobatches) +
                                   " microbatches per step with every micro-batch size tried (1, 2, 4, 8); give "
                                   "--micro-batch-size (the batch is in sequences, not tokens)");
  return out;
}

}  // namespace

StatusOr<std::vector<BatchSplit>> ResolveBatch(const PlannerOptions& o) {
  const int D = o.dp_size;
  if (D < 1) return Status::InvalidArgument("--data-parallel-size must be >= 1, got " + std::to_string(D));
  if (D == 1 || !o.global_batch_size || *o.global_batch_size < 1) {
    PW_ASSIGN_OR_RETURN(std::vector<BatchSplit> splits, ResolveReplicaBatch(o));
    for (BatchSplit& s : splits) s.global_batch_size *= D;
    return splits;
  }
  // Megatron: global batch = dp x micro-batch x m, asserted divisible.
  const int64_t G = *o.global_batch_size;
  const std::string d = " x --data-parallel-size " + std::to_string(D);
  if (G % D != 0)
    return Status::InvalidArgument(
        "--global-batch-size " + std::to_string(G) + " is not divisible by --data-parallel-size " + std::to_string(D) +
        " (global batch = dp x micro-batch x m: each of the " + std::to_string(D) +
        " replicas runs the same number of sequences); use " +
        (G / D > 0 ? std::to_string(G / D * D) + " or " : std::string()) + std::to_string((G / D + 1) * D));
  if (o.micro_batch_size && *o.micro_batch_size >= 1 && G % (*o.micro_batch_size * D) != 0)
    return Status::InvalidArgument("--global-batch-size " + std::to_string(G) +
                                   " is not divisible by --micro-batch-size " + std::to_string(*o.micro_batch_size) +
                                   d + " = " + std::to_string(*o.micro_batch_size * D) +
                                   " (Megatron asserts the same)");
  if (o.num_microbatches && *o.num_microbatches >= 1 && G / D < *o.num_microbatches)
    return Status::InvalidArgument("--global-batch-size " + std::to_string(G) + " / --data-parallel-size " +
                                   std::to_string(D) + " = " + std::to_string(G / D) +
                                   " sequences per replica is smaller than --num-microbatches " +
                                   std::to_string(*o.num_microbatches) + ": a microbatch cannot be empty");
  PlannerOptions replica = o;
  replica.global_batch_size = G / D;
  auto splits = ResolveReplicaBatch(replica);
  if (!splits.ok())
    return Status::InvalidArgument("per replica (--global-batch-size " + std::to_string(G) +
                                   " / --data-parallel-size " + std::to_string(D) + " = " + std::to_string(G / D) +
                                   " sequences): " + splits.status().message());
  for (BatchSplit& s : *splits) s.global_batch_size *= D;
  return splits;
}

}  // namespace pw
