// libpw_spm.so: a C interface over Debian's libsentencepiece (C++ API),
// loaded by tokenizer.cc with dlopen instead of being linked.
//
// Why a separately loaded module: Debian's libsentencepiece.so.0 carries its
// own copy of protobuf-lite and exports those symbols. Linked into the same
// process as LibTorch (which loads libprotobuf.so.32), one library's
// protobuf calls bind to the other's copy and the process crashes while the
// libraries initialise (SIGSEGV in
// google::protobuf::internal::ReflectionOps::FindInitializationErrors).
// tokenizer.cc opens this module RTLD_LOCAL, and RTLD_DEEPBIND when a
// libprotobuf is already in the process, so each keeps its own protobuf.
#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void CopyError(const std::string& message, char* err, int err_len) {
  if (err == nullptr || err_len <= 0) return;
  std::strncpy(err, message.c_str(), static_cast<size_t>(err_len) - 1);
  err[err_len - 1] = '\0';
}

}  // namespace

extern "C" {

// A loaded model, or null with the library's reason in `err`.
__attribute__((visibility("default"))) void* pw_spm_load(const char* path, char* err, int err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  const auto st = sp->Load(path);
  if (!st.ok()) {
    CopyError(st.ToString(), err, err_len);
    delete sp;
    return nullptr;
  }
  return sp;
}

__attribute__((visibility("default"))) void pw_spm_free(void* model) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(model);
}

__attribute__((visibility("default"))) int pw_spm_vocab_size(void* model) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(model)->GetPieceSize();
}

// The model's end-of-sentence id (-1 when the model has none).
__attribute__((visibility("default"))) int pw_spm_eos_id(void* model) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(model)->eos_id();
}

// Ids of text[0, len) into a malloc'd array (*ids, *count); 0 on success.
__attribute__((visibility("default"))) int pw_spm_encode(void* model, const char* text, size_t len, int** ids,
                                                         size_t* count) {
  std::vector<int> out;
  if (!static_cast<sentencepiece::SentencePieceProcessor*>(model)->Encode(std::string_view(text, len), &out).ok())
    return 1;
  *count = out.size();
  *ids = static_cast<int*>(std::malloc(sizeof(int) * (out.empty() ? 1 : out.size())));
  if (*ids == nullptr) return 1;
  if (!out.empty()) std::memcpy(*ids, out.data(), sizeof(int) * out.size());
  return 0;
}

// Text of ids[0, count) into a malloc'd buffer (*text, *len); 0 on success.
__attribute__((visibility("default"))) int pw_spm_decode(void* model, const int* ids, size_t count, char** text,
                                                         size_t* len) {
  std::string out;
  if (!static_cast<sentencepiece::SentencePieceProcessor*>(model)
           ->Decode(std::vector<int>(ids, ids + count), &out)
           .ok())
    return 1;
  *len = out.size();
  *text = static_cast<char*>(std::malloc(out.size() + 1));
  if (*text == nullptr) return 1;
  std::memcpy(*text, out.data(), out.size());
  (*text)[out.size()] = '\0';
  return 0;
}

__attribute__((visibility("default"))) void pw_spm_release(void* buffer) { std::free(buffer); }

}  // extern "C"
