// 64-bit FNV-1a (Fowler/Noll/Vo: for each byte, h = (h xor byte) x prime,
// prime 0x100000001b3), the one hash pipewright writes: the plan hash
// (docs/PLAN_FORMAT.md, "Byte-identical output and the plan hash"), parameter
// digests of the executor's checks and checkpoint digests.
//
// pipewright's offset basis is 1469598103934665603 (0x14650fb0739d0383), not
// the published 14695981039346656037 (0xcbf29ce484222325): the first writer
// dropped its last decimal digit. It is kept, because plan hashes are
// compared across ranks and recorded in checkpoints (a resume compares
// them), and every writer (plan, executor, checkpoints, the generation
// digests) has always used it; docs/PLAN_FORMAT.md states it. Pass
// kFnv1aPublishedOffsetBasis as `h` for the published hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pw {

inline constexpr uint64_t kFnv1aOffsetBasis = 1469598103934665603ull;  // 0x14650fb0739d0383
inline constexpr uint64_t kFnv1aPublishedOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnv1aPrime = 0x100000001b3ull;

// FNV-1a of the `n` bytes at `data`, one byte at a time, continuing from `h`
// (the offset basis for a fresh hash; a previous result to chain several
// buffers as if they were one). Never fails.
uint64_t Fnv1a64Bytes(const void* data, size_t n, uint64_t h = kFnv1aOffsetBasis);
// The same over the bytes of `text`.
inline uint64_t Fnv1a64(const std::string& text, uint64_t h = kFnv1aOffsetBasis) {
  return Fnv1a64Bytes(text.data(), text.size(), h);
}

// The word-wise variant for large buffers (checkpoint files, tensors): FNV-1a
// steps over 64-bit little-endian words, then over the remaining bytes one
// by one, continuing from `h`; several GB/s. Not the byte-wise hash: its own
// digests (checkpoint manifests) are only compared with its own. Chaining
// calls on pieces whose sizes are multiples of 8 equals one call on the
// whole.
uint64_t Fnv1a64Words(const void* data, size_t n, uint64_t h = kFnv1aOffsetBasis);

// `h` as 16 lower-case hex digits, leading zeros kept ("00ab...").
std::string HashHex(uint64_t h);

}  // namespace pw
