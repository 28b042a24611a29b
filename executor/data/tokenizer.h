// SentencePiece tokenizer (Debian's libsentencepiece, C++ API) for text data
// and generation. Torch-free. The library is reached through the module
// libpw_spm.so (spm_shim.cc), loaded with dlopen on first use: linked
// directly, its bundled protobuf clashes with LibTorch's (spm_shim.cc says
// how). The module is looked up at $PW_SPM_MODULE, beside the running
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
  // Loads a SentencePiece .model file (what `spm_train` writes). Errors:
  // NotFound / InvalidArgument naming "--tokenizer PATH" and the library's
  // reason; Internal if libpw_spm.so cannot be loaded.
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  ~Tokenizer();

  // Number of pieces: token ids are 0 .. vocab_size()-1.
  int64_t vocab_size() const;
  // Ids of `text` (SentencePiece's normalisation: a line starts with the
  // word-boundary piece; a newline inside `text` reads as a space).
  std::vector<int> Encode(const std::string& text) const;
  // Text of `ids` (ids out of range decode as nothing).
  std::string Decode(const std::vector<int>& ids) const;
  const std::string& path() const { return path_; }

 private:
  Tokenizer() = default;
  void* model_ = nullptr;  // the module's handle of the loaded model
  int64_t vocab_size_ = 0;
  std::string path_;
};

// Tokenizes the text file `text_path` into `fd` at byte `offset`: `width`
// (2 or 4) little-endian bytes per token, nothing else. The text is read in
// 1 MiB pieces and encoded one line at a time (a line longer than 1 MiB is
// cut at a UTF-8 character boundary), so memory stays bounded for any file
// size. Returns the number of tokens written. Errors: NotFound (text),
// InvalidArgument (a token id that does not fit `width`, a write error),
// naming the file.
StatusOr<int64_t> TokenizeTextFile(const Tokenizer& tokenizer, const std::string& text_path, int width, int fd,
                                   int64_t offset);

// `pipewright tokenize`: writes an llm.c token file (docs/DATA.md: 256 x
// int32 header, magic 20240520 version 1 uint16 tokens when the vocabulary
// has <= 65536 pieces, else magic 20240801 version 7 uint32 tokens) to
// `out_path` through a temporary file renamed at the end (nothing is left on
// failure). Returns the token count. Errors: the above, more than 2^31-1
// tokens (the header's int32 count), an unwritable output.
StatusOr<int64_t> WriteTokenFile(const Tokenizer& tokenizer, const std::string& text_path,
                                 const std::string& out_path);

}  // namespace pw::exec
