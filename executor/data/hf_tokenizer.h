// Hugging Face tokenizers' tokenizer.json (the file `Tokenizer.save` and
// `save_pretrained` write), read with nlohmann-json and run in C++: BPE
// models, byte-level (GPT-2, Llama 3, Qwen2 style: a Split regex and/or
// ByteLevel pre-tokenizer, GPT-2's byte-to-unicode map) and SentencePiece
// style (Metaspace pre-tokenizer or Prepend/Replace normalizer, byte
// fallback). The pre-tokenizer's regex runs on PCRE2 (8-bit, UTF + UCP: the
// Unicode classes \p{L}, \p{N}, \s of the patterns). docs/INTEROP.md lists
// what is supported and what is refused. Torch-free.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "executor/data/tokenizer.h"

namespace pw::exec {

class HfTokenizer final : public Tokenizer {
 public:
  // Loads `json_path`; `shown` is the path as the user gave it (a directory
  // or the file), used in messages. Errors: NotFound (no file),
  // InvalidArgument "--tokenizer SHOWN: FIELD: reason" for bad JSON, a
  // missing field or an unsupported component (e.g. `normalizer.type 'NFC'
  // is not supported`).
  static StatusOr<std::unique_ptr<HfTokenizer>> Load(const std::string& json_path, const std::string& shown);
  ~HfTokenizer() override;

  int64_t vocab_size() const override;
  std::vector<int> Encode(const std::string& text) const override;
  std::string Decode(const std::vector<int>& ids) const override;
  int end_of_text_id() const override;
  bool line_based() const override { return false; }
  size_t SafeCut(const std::string& text) const override;
  const char* kind() const override { return "tokenizer.json"; }

  std::vector<int> EncodePart(const std::string& text, bool starts_document, bool ends_document) const override;

  struct Impl;

 private:
  HfTokenizer();
  std::unique_ptr<Impl> impl_;
};

// GPT-2's reversible byte -> Unicode character map (OpenAI's gpt-2
// src/encoder.py, bytes_to_unicode; the same in HF's ByteLevel): the
// printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF map to the character
// of the same code, the 68 others, in increasing order, to U+0100, U+0101,
// ... Returns the UTF-8 of the character of byte `b`.
std::string ByteLevelChar(unsigned char b);

}  // namespace pw::exec
