// Training data: token ids from a file, cut into windows of seq+1 tokens and
// served per optimizer step in a random (seeded) or sequential order.
// Torch-free. docs/DATA.md is the user-facing description of every layout and
// of the exact row order.
//
// Sources (DataSpec below; the file is memory-mapped, never read whole):
//  - text as bytes (no --tokenizer, no --token-dtype, no llm.c header):
//    token = byte value, vocabulary 256;
//  - text through a SentencePiece model (--tokenizer): tokenized in bounded
//    memory into an unlinked temporary token file, then mapped (tokenizer.h);
//  - a flat little-endian uint16 or uint32 token array (nanoGPT's train.bin
//    layout), dtype from --token-dtype;
//  - llm.c's token file: a 256 x int32 little-endian header (magic 20240520
//    version 1: uint16 tokens; magic 20240801 version 7: uint32 tokens;
//    header[2] = token count), then the tokens. Detected by its header.
//
// Windows: with N tokens and sequence length T, window w (0 <= w < W,
// W = floor((N - 1) / T)) is tokens [w*T, w*T + T] (T+1 tokens): inputs its
// first T, targets its last T (llm.c's layout: consecutive windows share one
// token, every token but the first is a target once per epoch).
// The sample stream: sample i (i = 0, 1, ...) is window order_e(i mod W) of
// epoch e = i / W, where order_e is the identity (sequential) or a keyed
// pseudo-random permutation of [0, W) (random; a Feistel network with cycle
// walking, O(1) memory, keyed by (seed, e)). Step t's global batch of G rows
// is samples t*G .. t*G+G-1, in order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "executor/data/token_file.h"

namespace pw::exec {

// Rows of sequences of `seq` tokens. targets are the inputs shifted by one
// token (next-token prediction).
struct TokenBatch {
  int rows = 0;
  int seq = 0;
  std::vector<int64_t> inputs;   // (rows, seq), row-major
  std::vector<int64_t> targets;  // (rows, seq)
};

// How `run` reads --data. Every field is a CLI flag of `run`.
struct DataSpec {
  std::string path;              // --data
  std::string token_dtype;       // --token-dtype: "" (text, or an llm.c header), "uint16" or "uint32"
  std::string tokenizer;         // --tokenizer: SentencePiece .model; "" = bytes
  std::string order = "random";  // --data-order: "random" or "sequential"
};

// The checks of a DataSpec alone (no files): InvalidArgument naming the flag
// (--data-order, --token-dtype, --tokenizer with --token-dtype).
Status ValidateDataSpec(const DataSpec& spec);

// A read-only memory mapping of a whole regular file (munmap on destruction).
class MappedFile;

class TextDataset {
 public:
  // Opens `spec.path` for sequences of `seq` tokens of a model with
  // `vocab_size` entries, before any compute. Errors (InvalidArgument unless
  // said): NotFound if it cannot be opened; a directory, device or pipe;
  // fewer than seq+1 tokens; a raw token file whose size is not a multiple of
  // the dtype's width; an llm.c header whose count disagrees with the file
  // size or whose dtype disagrees with --token-dtype; a token id >=
  // vocab_size ("--data F: token 70000 at token offset 12 (byte offset 1048)
  // is >= the model's vocab_size 50257"; found by a one-time scan in 1 MiB
  // reads, so bounded memory); byte tokens with vocab_size < 256; a
  // --tokenizer whose vocabulary size differs from vocab_size (naming both
  // and the file); text above kMaxRunTextBytes with --tokenizer (pointing to
  // `pipewright tokenize`).
  static StatusOr<TextDataset> Open(const DataSpec& spec, int seq, uint64_t seed, int64_t vocab_size);
  // Text as bytes in random order (the original call; vocab 256).
  static StatusOr<TextDataset> Open(const std::string& path, int seq, uint64_t seed);
  // From bytes in memory (tests): byte tokens.
  static StatusOr<TextDataset> FromBytes(std::string bytes, int seq, uint64_t seed);
  // From token ids in memory (tests), `order` "random" or "sequential".
  static StatusOr<TextDataset> FromTokens(const std::vector<uint32_t>& tokens, int seq, uint64_t seed,
                                          const std::string& order);

  // The batch of optimizer step `step` (0-based) as one process sees it:
  // rows `row_begin` .. row_begin+row_count-1 of the step's global batch of
  // `global_rows` rows, i.e. samples step*global_rows + row_begin + j. A
  // data-parallel replica d with R rows per step passes (step, D*R, d*R, R).
  // The same arguments always give the same batch. Touched pages of the
  // mapping are released after the copy (RSS stays bounded).
  TokenBatch Batch(int64_t step, int global_rows, int row_begin, int row_count) const;
  // The whole global batch: Batch(step, rows, 0, rows).
  TokenBatch Batch(int64_t step, int rows) const { return Batch(step, rows, 0, rows); }

  int64_t num_windows() const { return num_windows_; }
  int64_t num_tokens() const { return num_tokens_; }
  // Bytes of --data (the text, or the token file).
  int64_t num_bytes() const { return num_bytes_; }
  // "bytes of text", "uint16 tokens (llm.c header)", ... for the run's banner.
  const std::string& description() const { return description_; }
  bool sequential() const { return sequential_; }

  // Token id at position i (0 <= i < num_tokens()).
  uint32_t TokenAt(int64_t i) const;
  // Window index of sample `sample` (see the header comment).
  int64_t WindowOfSample(int64_t sample) const;

 private:
  std::shared_ptr<const MappedFile> file_;  // the mapping, or the in-memory bytes (tests)
  const unsigned char* base_ = nullptr;     // first token
  int width_ = 1;                           // bytes per token: 1, 2 or 4
  int64_t num_tokens_ = 0;
  int64_t num_bytes_ = 0;
  int seq_ = 0;
  uint64_t seed_ = 0;
  bool sequential_ = false;
  int64_t num_windows_ = 0;
  std::string description_;
  static StatusOr<TextDataset> Finish(TextDataset ds, int seq, uint64_t seed, const std::string& order);
};

// Largest text `run --tokenizer` tokenizes itself (each rank tokenizes it,
// in 1 MiB pieces, so it bounds the time before step 1, not the memory):
// 256 MiB. Larger text: `pipewright tokenize` once, then --data tokens.bin.
inline constexpr int64_t kMaxRunTextBytes = int64_t{256} << 20;

}  // namespace pw::exec
