// Tokenizers for text data and generation. Torch-free. Two kinds behind one
// interface, chosen by Tokenizer::Load from the path (a small table in
// tokenizer.cc):
//   *.model                       SentencePiece (Debian's libsentencepiece,
//                                 C++ API, through the dlopen'ed module
//                                 libpw_spm.so: linked directly, its bundled
//                                 protobuf clashes with LibTorch's; spm_shim.cc)
//   tokenizer.json, or a directory holding one
//                                 Hugging Face tokenizers' file: BPE, byte-level
//                                 or SentencePiece-style (hf_tokenizer.h)
// The SentencePiece module is looked up at $PW_SPM_MODULE, beside the running
// executable, in the build tree, then in <prefix>/lib/pipewright/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace pw::exec {

class Tokenizer {
 public:
  // Loads the tokenizer at `path`: a SentencePiece .model file (what
  // `spm_train` writes), a Hugging Face tokenizer.json, or a directory
  // holding tokenizer.json. Errors: NotFound / InvalidArgument naming
  // "--tokenizer PATH" (and the JSON field at fault); Internal if
  // libpw_spm.so cannot be loaded.
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  virtual ~Tokenizer() = default;

  // Number of token ids: 0 .. vocab_size()-1 (for tokenizer.json: the
  // model's vocabulary and the added tokens, HF's get_vocab_size(True)).
  virtual int64_t vocab_size() const = 0;
  // Ids of a whole text (a prompt, a document). SentencePiece: its
  // normalisation (a line starts with the word-boundary piece; a newline
  // inside `text` reads as a space). tokenizer.json: HF's
  // `encode(text).ids` (added tokens, normalizer, pre-tokenizer, BPE, the
  // post-processor's special tokens such as a BOS).
  virtual std::vector<int> Encode(const std::string& text) const = 0;
  // Ids of a part of a document: `starts_document` (the post-processor's
  // leading tokens such as a BOS, the first word's prefix "▁" of Metaspace /
  // Prepend) and `ends_document` (the post-processor's trailing tokens).
  // Encode(t) is EncodePart(t, true, true). The streaming functions below
  // encode long documents in pieces cut by SafeCut, each with the flags of
  // its place. SentencePiece: Encode, whatever the flags.
  virtual std::vector<int> EncodePart(const std::string& text, bool starts_document, bool ends_document) const = 0;
  // Text of `ids` (ids out of range decode as nothing; tokenizer.json:
  // special added tokens are skipped, as HF's decode(skip_special_tokens=True)).
  virtual std::string Decode(const std::vector<int>& ids) const = 0;
  // The end-of-text (document separator) id, or -1 when the tokenizer has
  // none. SentencePiece: the model's eos piece; tokenizer.json: the first
  // special added token among <|endoftext|>, <|end_of_text|>, </s>, <eos>,
  // <|im_end|>.
  virtual int end_of_text_id() const = 0;
  // True when long text is encoded one line at a time (SentencePiece, whose
  // pieces never span a line); false when a document is encoded whole, cut
  // into pieces only where SafeCut says.
  virtual bool line_based() const = 0;
  // For !line_based(): the length of the longest prefix of `text` (up to
  // text.size()) that ends where the encoding may be cut, 0 when there is
  // none: before a space (U+0020) that follows a character other than
  // whitespace, and not inside an added token. At such a point HF's
  // pre-tokenizers (GPT-2's and Llama 3's patterns, Metaspace) start a new
  // pre-token, so EncodePart(a, true, false) + EncodePart(b, false, true) ==
  // Encode(a + b).
  virtual size_t SafeCut(const std::string& text) const = 0;
  // "SentencePiece" or "tokenizer.json".
  virtual const char* kind() const = 0;
  const std::string& path() const { return path_; }

 protected:
  std::string path_;
};

// Tokenizes the file `text_path` into `fd` at byte `offset`: `width` (2 or
// 4) little-endian bytes per token, nothing else. The text is read in 1 MiB
// pieces, so memory stays bounded for any file size:
//  - text_field empty: the file is text. A line-based tokenizer encodes one
//    line at a time (a line longer than 1 MiB is cut at a UTF-8 character
//    boundary); a tokenizer.json encodes the file as one document, cut at
//    SafeCut points once 1 MiB is pending (ids identical to encoding the
//    whole file at once).
//  - text_field set: the file is JSON Lines, one JSON object a line (blank
//    lines skipped); the string member `text_field` of each is a document.
//    Each document is preceded by the tokenizer's end-of-text id (llm.c's
//    convention, dev/data/fineweb.py: the token delimits documents) and
//    encoded as above. Memory is bounded by the longest line.
// Returns the number of tokens written. Errors: NotFound (text),
// InvalidArgument naming the file and line (bad JSON, a missing or
// non-string field, no end-of-text token), a token id that does not fit
// `width`, a write error.
StatusOr<int64_t> TokenizeTextFile(const Tokenizer& tokenizer, const std::string& text_path, int width, int fd,
                                   int64_t offset, const std::string& text_field = "");

// `pipewright tokenize`: writes an llm.c token file (docs/DATA.md: 256 x
// int32 header, magic 20240520 version 1 uint16 tokens when the vocabulary
// has <= 65536 ids, else magic 20240801 version 7 uint32 tokens) to
// `out_path` through a temporary file renamed at the end (nothing is left on
// failure). `text_field` as for TokenizeTextFile. Returns the token count.
// Errors: the above, more than 2^31-1 tokens (the header's int32 count), an
// unwritable output.
StatusOr<int64_t> WriteTokenFile(const Tokenizer& tokenizer, const std::string& text_path, const std::string& out_path,
                                 const std::string& text_field = "");

}  // namespace pw::exec
