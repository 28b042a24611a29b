#include "executor/data/tokenizer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>


#include "executor/data/token_file.h"

namespace pw::exec {

namespace {

// The functions of libpw_spm.so (spm_shim.cc).
struct SpmModule {
  void* (*load)(const char*, char*, int) = nullptr;
  void (*free_model)(void*) = nullptr;
  int (*vocab_size)(void*) = nullptr;
  int (*encode)(void*, const char*, size_t, int**, size_t*) = nullptr;
  int (*decode)(void*, const int*, size_t, char**, size_t*) = nullptr;
  void (*release)(void*) = nullptr;
};

std::string ExeDir() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return ".";
  self[n] = '\0';
  std::string s(self);
  return s.substr(0, s.rfind('/'));
}

// Loads the module once per process (never unloaded). Its own protobuf must
// stay private when LibTorch's libprotobuf is already loaded: RTLD_DEEPBIND
// then (only then: sanitizers refuse it, and without a second protobuf it
// is not needed).
StatusOr<const SpmModule*> Module() {
  static StatusOr<const SpmModule*> loaded = []() -> StatusOr<const SpmModule*> {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("PW_SPM_MODULE"); env && *env) candidates.push_back(env);
    const std::string exe = ExeDir();
    candidates.push_back(exe + "/libpw_spm.so");
#ifdef PW_SPM_MODULE_BUILD_PATH
    candidates.push_back(PW_SPM_MODULE_BUILD_PATH);
#endif
    candidates.push_back(exe + "/../lib/pipewright/libpw_spm.so");
    int flags = RTLD_NOW | RTLD_LOCAL;
    if (::dlopen("libprotobuf.so.32", RTLD_NOW | RTLD_NOLOAD) != nullptr ||
        ::dlopen("libprotobuf.so", RTLD_NOW | RTLD_NOLOAD) != nullptr)
      flags |= RTLD_DEEPBIND;
    std::string tried;
    for (const std::string& path : candidates) {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        tried += " " + path;
        continue;
      }
      void* h = ::dlopen(path.c_str(), flags);
      if (h == nullptr) return Status::Internal(std::string("cannot load the SentencePiece module ") + path + ": " +
                                                ::dlerror());
      auto* m = new SpmModule();
      m->load = reinterpret_cast<decltype(m->load)>(::dlsym(h, "pw_spm_load"));
      m->free_model = reinterpret_cast<decltype(m->free_model)>(::dlsym(h, "pw_spm_free"));
      m->vocab_size = reinterpret_cast<decltype(m->vocab_size)>(::dlsym(h, "pw_spm_vocab_size"));
      m->encode = reinterpret_cast<decltype(m->encode)>(::dlsym(h, "pw_spm_encode"));
      m->decode = reinterpret_cast<decltype(m->decode)>(::dlsym(h, "pw_spm_decode"));
      m->release = reinterpret_cast<decltype(m->release)>(::dlsym(h, "pw_spm_release"));
      if (!m->load || !m->free_model || !m->vocab_size || !m->encode || !m->decode || !m->release)
        return Status::Internal("the SentencePiece module " + path + " lacks a pw_spm_* function");
      return static_cast<const SpmModule*>(m);
    }
    return Status::Internal("the SentencePiece module libpw_spm.so was not found (tried" + tried +
                            "); build it with the executor, or set PW_SPM_MODULE to its path");
  }();
  return loaded;
}

}  // namespace

Tokenizer::~Tokenizer() {
  if (model_ != nullptr) (*Module())->free_model(model_);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::NotFound("--tokenizer " + path + ": no such file (a SentencePiece .model, e.g. from spm_train)");
  PW_ASSIGN_OR_RETURN(const SpmModule* m, Module());
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->path_ = path;
  char err[512] = {0};
  t->model_ = m->load(path.c_str(), err, sizeof err);
  if (t->model_ == nullptr)
    return Status::InvalidArgument("--tokenizer " + path + ": not a SentencePiece model: " + err);
  t->vocab_size_ = m->vocab_size(t->model_);
  return t;
}

int64_t Tokenizer::vocab_size() const { return vocab_size_; }

std::vector<int> Tokenizer::Encode(const std::string& text) const {
  const SpmModule* m = *Module();
  int* ids = nullptr;
  size_t n = 0;
  std::vector<int> out;
  if (m->encode(model_, text.data(), text.size(), &ids, &n) == 0) out.assign(ids, ids + n);
  m->release(ids);
  return out;
}

std::string Tokenizer::Decode(const std::vector<int>& ids) const {
  std::vector<int> in_range;
  in_range.reserve(ids.size());
  for (int id : ids)
    if (id >= 0 && id < vocab_size_) in_range.push_back(id);
  const SpmModule* m = *Module();
  char* text = nullptr;
  size_t n = 0;
  std::string out;
  if (m->decode(model_, in_range.data(), in_range.size(), &text, &n) == 0) out.assign(text, n);
  m->release(text);
  return out;
}

namespace {

// Length of the longest prefix of s[0, n) that ends on a UTF-8 character
// boundary (n itself when s[n] is not a continuation byte).
size_t Utf8Cut(const std::string& s, size_t n) {
  size_t cut = n;
  while (cut > 0 && cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return cut == 0 ? n : cut;
}

Status WriteAll(int fd, const std::vector<unsigned char>& buf, int64_t offset, const std::string& what) {
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::pwrite(fd, buf.data() + done, buf.size() - done, offset + static_cast<int64_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::InvalidArgument(what + ": write failed: " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<int64_t> TokenizeTextFile(const Tokenizer& tokenizer, const std::string& text_path, int width, int fd,
                                   int64_t offset) {
  std::FILE* in = std::fopen(text_path.c_str(), "rb");
  if (!in) return Status::NotFound("--data " + text_path + ": cannot open: " + std::strerror(errno));
  constexpr size_t kPiece = size_t{1} << 20;
  const int64_t limit = width == 2 ? 65536 : (int64_t{1} << 32);
  std::string pending;  // text read but not yet encoded (< kPiece after each round)
  std::vector<char> chunk(kPiece);
  std::vector<unsigned char> out;
  int64_t count = 0;
  Status st;
  auto encode = [&](const std::string& line) {
    if (!st.ok()) return;
    const std::vector<int> ids = tokenizer.Encode(line);
    out.clear();
    for (int id : ids) {
      if (id < 0 || id >= limit) {
        st = Status::InvalidArgument("--tokenizer " + tokenizer.path() + ": id " + std::to_string(id) +
                                     " does not fit " + std::to_string(width) + "-byte tokens");
        return;
      }
      for (int b = 0; b < width; ++b) out.push_back(static_cast<unsigned char>((static_cast<uint32_t>(id) >> (8 * b)) & 0xFF));
    }
    st = WriteAll(fd, out, offset + count * width, "tokens of " + text_path);
    count += static_cast<int64_t>(ids.size());
  };
  bool eof = false;
  while (st.ok() && !eof) {
    const size_t got = std::fread(chunk.data(), 1, kPiece, in);
    if (got < kPiece) eof = true;
    pending.append(chunk.data(), got);
    // Every complete line, one at a time.
    size_t begin = 0;
    for (size_t nl; st.ok() && (nl = pending.find('\n', begin)) != std::string::npos; begin = nl + 1)
      if (nl > begin) encode(pending.substr(begin, nl - begin));
    pending.erase(0, begin);
    // A line longer than a piece: encode its first part now.
    while (st.ok() && pending.size() >= kPiece) {
      const size_t cut = Utf8Cut(pending, kPiece);
      encode(pending.substr(0, cut));
      pending.erase(0, cut);
    }
  }
  if (std::ferror(in)) st = Status::InvalidArgument("--data " + text_path + ": read error");
  std::fclose(in);
  if (st.ok() && !pending.empty()) encode(pending);
  PW_RETURN_IF_ERROR(st);
  return count;
}

StatusOr<int64_t> WriteTokenFile(const Tokenizer& tokenizer, const std::string& text_path,
                                 const std::string& out_path) {
  const std::string tmp = out_path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::InvalidArgument("-o " + out_path + ": cannot create " + tmp + ": " + std::strerror(errno));
  const bool wide = tokenizer.vocab_size() > 65536;
  const int width = wide ? 4 : 2;
  StatusOr<int64_t> count = TokenizeTextFile(tokenizer, text_path, width, fd, kLlmcHeaderInts * 4);
  Status st = count.status();
  if (st.ok() && *count > 0x7FFFFFFF)
    st = Status::InvalidArgument("--data " + text_path + ": " + std::to_string(*count) +
                                 " tokens; an llm.c token file holds at most 2147483647 (int32 count)");
  if (st.ok()) {
    std::vector<unsigned char> header(kLlmcHeaderInts * 4, 0);
    const int32_t fields[3] = {wide ? kLlmcMagicU32 : kLlmcMagicU16, wide ? 7 : 1, static_cast<int32_t>(*count)};
    for (int f = 0; f < 3; ++f)
      for (int b = 0; b < 4; ++b)
        header[f * 4 + b] = static_cast<unsigned char>((static_cast<uint32_t>(fields[f]) >> (8 * b)) & 0xFF);
    st = WriteAll(fd, header, 0, "-o " + out_path);
  }
  if (st.ok() && ::fsync(fd) != 0) st = Status::InvalidArgument("-o " + out_path + ": fsync failed");
  ::close(fd);
  if (st.ok() && std::rename(tmp.c_str(), out_path.c_str()) != 0)
    st = Status::InvalidArgument("-o " + out_path + ": rename from " + tmp + " failed: " + std::strerror(errno));
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st;
  }
  return *count;
}

}  // namespace pw::exec
