// Training data: a text file as bytes (token = byte value, vocabulary 256),
// cut into fixed-length sequences and served in a deterministic shuffled
// order from a seed. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace pw::exec {

// One step's batch of `rows` sequences of `seq` tokens. targets are the
// inputs shifted by one token (next-byte prediction).
struct TokenBatch {
  int rows = 0;
  int seq = 0;
  std::vector<int64_t> inputs;   // (rows, seq), row-major
  std::vector<int64_t> targets;  // (rows, seq)
};

class TextDataset {
 public:
  // Reads `path` whole. Errors: NotFound if it cannot be read;
  // InvalidArgument if it holds fewer than seq+1 bytes ("--data <path>: 12
  // bytes, need at least 65 for --seq-length 64").
  static StatusOr<TextDataset> Open(const std::string& path, int seq, uint64_t seed);
  // From bytes in memory (tests).
  static StatusOr<TextDataset> FromBytes(std::string bytes, int seq, uint64_t seed);

  // The batch of optimizer step `step` (0-based): rows step*rows ..
  // step*rows+rows-1 of the sample stream. The stream visits the
  // non-overlapping windows of seq+1 bytes in an order shuffled per epoch by
  // (seed, epoch); the same (seed, step, rows) always gives the same batch.
  TokenBatch Batch(int64_t step, int rows) const;

  int64_t num_windows() const { return num_windows_; }
  int64_t num_bytes() const { return static_cast<int64_t>(bytes_.size()); }

 private:
  std::vector<int64_t> EpochOrder(int64_t epoch) const;
  std::string bytes_;
  int seq_ = 0;
  uint64_t seed_ = 0;
  int64_t num_windows_ = 0;
};

}  // namespace pw::exec
