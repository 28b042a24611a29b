#include "executor/data.h"

#include <filesystem>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

namespace pw::exec {

StatusOr<TextDataset> TextDataset::Open(const std::string& path, int seq, uint64_t seed) {
  // Only a regular file: a directory reads as 0 bytes and a device such as
  // /dev/zero never ends (the whole file is read into memory).
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::is_directory(status))
    return Status::InvalidArgument("--data " + path + ": is a directory; give a text file");
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    return Status::InvalidArgument("--data " + path + ": not a regular file (a device or pipe has no end to read to)");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("--data " + path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  auto ds = FromBytes(ss.str(), seq, seed);
  if (!ds.ok()) return ds.status().WithContext("--data " + path);
  return ds;
}

StatusOr<TextDataset> TextDataset::FromBytes(std::string bytes, int seq, uint64_t seed) {
  if (seq < 1) return Status::InvalidArgument("sequence length must be >= 1, got " + std::to_string(seq));
  if (static_cast<int64_t>(bytes.size()) < seq + 1)
    return Status::InvalidArgument(std::to_string(bytes.size()) + " bytes, need at least " + std::to_string(seq + 1) +
                                   " for sequence length " + std::to_string(seq));
  TextDataset ds;
  ds.bytes_ = std::move(bytes);
  ds.seq_ = seq;
  ds.seed_ = seed;
  ds.num_windows_ = static_cast<int64_t>(ds.bytes_.size()) / (seq + 1);
  return ds;
}

std::vector<int64_t> TextDataset::EpochOrder(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(num_windows_));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epoch));
  // Fisher-Yates with our own draw: std::shuffle's algorithm is unspecified.
  for (int64_t i = num_windows_ - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

TokenBatch TextDataset::Batch(int64_t step, int rows) const {
  TokenBatch b;
  b.rows = rows;
  b.seq = seq_;
  b.inputs.resize(static_cast<size_t>(rows) * seq_);
  b.targets.resize(static_cast<size_t>(rows) * seq_);
  int64_t cached_epoch = -1;
  std::vector<int64_t> order;
  for (int r = 0; r < rows; ++r) {
    const int64_t sample = step * rows + r;
    const int64_t epoch = sample / num_windows_;
    if (epoch != cached_epoch) {
      order = EpochOrder(epoch);
      cached_epoch = epoch;
    }
    const int64_t start = order[static_cast<size_t>(sample % num_windows_)] * (seq_ + 1);
    for (int t = 0; t < seq_; ++t) {
      b.inputs[static_cast<size_t>(r) * seq_ + t] = static_cast<unsigned char>(bytes_[start + t]);
      b.targets[static_cast<size_t>(r) * seq_ + t] = static_cast<unsigned char>(bytes_[start + t + 1]);
    }
  }
  return b;
}

}  // namespace pw::exec
