// The llm.c token file format, which `pipewright tokenize` writes
// (tokenizer.h) and `run --data` reads (data.h): a header of 256
// little-endian int32 -- magic, version, token count, then zeros -- followed
// by the tokens as little-endian uint16 (version 1) or uint32 (version 7).
// The format is llm.c's (Karpathy, dev/data/data_common.py); docs/DATA.md
// describes it for users.
#pragma once

#include <cstdint>

namespace pw::exec {

inline constexpr int32_t kLlmcMagicU16 = 20240520;  // version 1, uint16 tokens (GPT-2)
inline constexpr int32_t kLlmcMagicU32 = 20240801;  // version 7, uint32 tokens (Llama 3)
inline constexpr int kLlmcHeaderInts = 256;         // header length in int32 (1024 bytes)

}  // namespace pw::exec
