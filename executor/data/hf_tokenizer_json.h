// The reader of Hugging Face tokenizers' tokenizer.json: the file parsed
// (nlohmann-json) and checked into a typed description, HfTokenizerSpec,
// that the engine (hf_tokenizer.cc: BPE encode / decode) runs. Everything a
// file may hold that pipewright cannot run the way HF does is refused here,
// naming the field (docs/INTEROP.md lists what is supported); the regex
// patterns are kept as text (the engine compiles them). Torch-free.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

namespace pw::exec {

struct HfTokenizerSpec {
  // ---- model: BPE ----
  std::unordered_map<std::string, int> token_to_id;          // the model's vocabulary, as written in the file
  std::vector<std::string> id_to_token;                      // every id (model and added tokens); "" where unused
  std::unordered_map<uint64_t, std::pair<int, int>> merges;  // (left id << 32 | right id) -> (rank, merged id)
  bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
  int unk_id = -1;                     // model.unk_token's id, -1 if none
  std::array<int, 256> fallback_id{};  // ids of the <0xNN> tokens, -1 if absent

  // ---- added_tokens, in file order ----
  struct Added {
    std::string content;
    int id;
    bool special;  // skipped by decode
  };
  std::vector<Added> added;
  int end_of_text_id = -1;  // the first special added token named like an end of text (<|endoftext|>, </s>, ...)

  // ---- normalizer: Prepend / Replace steps in order ----
  struct Norm {
    bool prepend;
    std::string a, b;  // prepend: a; replace: a -> b
  };
  std::vector<Norm> norms;

  // ---- pre_tokenizer steps in order ----
  struct Pre {
    enum Kind { kSplit, kByteLevel, kMetaspace } kind;
    std::string pattern;      // kSplit; kByteLevel with use_regex (GPT-2's); "" for none
    bool literal = false;     // kSplit: a {"String": ...} pattern, matched as is
    std::string field;        // where the pattern was read (for the engine's compile error)
    bool removed = false;     // kSplit: behavior Removed (else Isolated)
    std::string replacement;  // kMetaspace
    int prepend = 0;          // kMetaspace: 0 never, 1 first, 2 always
    bool split = true;        // kMetaspace
  };
  std::vector<Pre> pres;
  bool byte_level = false;  // a ByteLevel pre-tokenizer: pieces are raw bytes, symbols start as bytes

  // ---- post_processor: ids before and after the sequence ----
  std::vector<int> prefix_ids, suffix_ids;

  // ---- decoder steps in order ----
  struct Dec {
    enum Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind;
    std::string a, b;  // kReplace a -> b; kStrip/kMetaspace: a = the character
    int start = 0, stop = 0;
    int prepend = 0;  // kMetaspace
  };
  std::vector<Dec> decs;
  bool has_decoder = false;  // none: decode joins the tokens with spaces, as HF
};

// Reads and checks `json_path`; `shown` is the path as the user gave it (a
// directory or the file), used in messages. Errors: NotFound (no file),
// InvalidArgument "--tokenizer SHOWN: FIELD: reason" for bad JSON, a missing
// field or an unsupported component (e.g. `normalizer.type 'NFC' is not
// supported`).
StatusOr<HfTokenizerSpec> ReadTokenizerJson(const std::string& json_path, const std::string& shown);

}  // namespace pw::exec
