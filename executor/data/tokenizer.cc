#include "executor/data/tokenizer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/utf8.h"
#include "executor/data/hf_tokenizer.h"
#include "executor/data/token_file.h"

namespace pw::exec {

namespace {

// The functions of libpw_spm.so (spm_shim.cc).
struct SpmModule {
  void* (*load)(const char*, char*, int) = nullptr;
  void (*free_model)(void*) = nullptr;
  int (*vocab_size)(void*) = nullptr;
  int (*eos_id)(void*) = nullptr;
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
      if (h == nullptr)
        return Status::Internal(std::string("cannot load the SentencePiece module ") + path + ": " + ::dlerror());
      auto* m = new SpmModule();
      m->load = reinterpret_cast<decltype(m->load)>(::dlsym(h, "pw_spm_load"));
      m->free_model = reinterpret_cast<decltype(m->free_model)>(::dlsym(h, "pw_spm_free"));
      m->vocab_size = reinterpret_cast<decltype(m->vocab_size)>(::dlsym(h, "pw_spm_vocab_size"));
      m->eos_id = reinterpret_cast<decltype(m->eos_id)>(::dlsym(h, "pw_spm_eos_id"));
      m->encode = reinterpret_cast<decltype(m->encode)>(::dlsym(h, "pw_spm_encode"));
      m->decode = reinterpret_cast<decltype(m->decode)>(::dlsym(h, "pw_spm_decode"));
      m->release = reinterpret_cast<decltype(m->release)>(::dlsym(h, "pw_spm_release"));
      if (!m->load || !m->free_model || !m->vocab_size || !m->eos_id || !m->encode || !m->decode || !m->release)
        return Status::Internal("the SentencePiece module " + path + " lacks a pw_spm_* function");
      return static_cast<const SpmModule*>(m);
    }
    return Status::Internal("the SentencePiece module libpw_spm.so was not found (tried" + tried +
                            "); build it with the executor, or set PW_SPM_MODULE to its path");
  }();
  return loaded;
}

// A SentencePiece model through libpw_spm.so.
class SpmTokenizer final : public Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path) {
    PW_ASSIGN_OR_RETURN(const SpmModule* m, Module());
    std::unique_ptr<SpmTokenizer> t(new SpmTokenizer());
    t->path_ = path;
    char err[512] = {0};
    t->model_ = m->load(path.c_str(), err, sizeof err);
    if (t->model_ == nullptr)
      return Status::InvalidArgument("--tokenizer " + path + ": not a SentencePiece model: " + err);
    t->vocab_size_ = m->vocab_size(t->model_);
    t->eos_ = m->eos_id(t->model_);
    return std::unique_ptr<Tokenizer>(std::move(t));
  }
  ~SpmTokenizer() override {
    if (model_ != nullptr) (*Module())->free_model(model_);
  }
  int64_t vocab_size() const override { return vocab_size_; }
  std::vector<int> Encode(const std::string& text) const override {
    const SpmModule* m = *Module();
    int* ids = nullptr;
    size_t n = 0;
    std::vector<int> out;
    if (m->encode(model_, text.data(), text.size(), &ids, &n) == 0) out.assign(ids, ids + n);
    m->release(ids);
    return out;
  }
  std::vector<int> EncodePart(const std::string& text, bool, bool) const override { return Encode(text); }
  std::string Decode(const std::vector<int>& ids) const override {
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
  int end_of_text_id() const override { return eos_; }
  bool line_based() const override { return true; }
  size_t SafeCut(const std::string& text) const override { return text.size(); }
  const char* kind() const override { return "SentencePiece"; }

 private:
  SpmTokenizer() = default;
  void* model_ = nullptr;  // the module's handle of the loaded model
  int64_t vocab_size_ = 0;
  int eos_ = -1;
};

StatusOr<std::unique_ptr<Tokenizer>> LoadHf(const std::string& json_path, const std::string& shown) {
  PW_ASSIGN_OR_RETURN(std::unique_ptr<HfTokenizer> t, HfTokenizer::Load(json_path, shown));
  return std::unique_ptr<Tokenizer>(std::move(t));
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

// The kinds of --tokenizer, by the path: the first row that matches loads it.
StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  struct Kind {
    bool (*matches)(const std::string&);
    StatusOr<std::unique_ptr<Tokenizer>> (*load)(const std::string&);
  };
  static const Kind kKinds[] = {
      // A directory holding tokenizer.json (a Hugging Face model directory).
      {[](const std::string& p) {
         std::error_code e;
         return fs::is_directory(p, e);
       },
       [](const std::string& p) -> StatusOr<std::unique_ptr<Tokenizer>> {
         const std::string file = (fs::path(p) / "tokenizer.json").string();
         std::error_code e;
         if (!fs::is_regular_file(file, e))
           return Status::NotFound("--tokenizer " + p +
                                   ": a directory without tokenizer.json (a Hugging Face "
                                   "tokenizer directory holds one)");
         return LoadHf(file, p);
       }},
      // tokenizer.json, or any *.json: Hugging Face tokenizers' file.
      {[](const std::string& p) { return EndsWith(p, ".json"); }, [](const std::string& p) { return LoadHf(p, p); }},
      // Anything else: a SentencePiece model (*.model by convention).
      {[](const std::string&) { return true; }, &SpmTokenizer::Load},
  };
  const bool exists = fs::exists(path, ec);
  if (!exists)
    return Status::NotFound("--tokenizer " + path +
                            ": no such file (a SentencePiece .model, e.g. from spm_train; a "
                            "Hugging Face tokenizer.json; or a directory holding tokenizer.json)");
  for (const Kind& k : kKinds)
    if (k.matches(path)) return k.load(path);
  return Status::Internal("unreachable");
}

namespace {

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

namespace {

// Writes the ids of one text stream to `fd`: a document at a time, each
// encoded as its kind of tokenizer needs (tokenizer.h: lines, or SafeCut
// pieces of at most ~1 MiB).
class TokenSink {
 public:
  TokenSink(const Tokenizer& t, int width, int fd, int64_t offset, std::string what)
      : t_(t),
        width_(width),
        fd_(fd),
        offset_(offset),
        what_(std::move(what)),
        limit_(width == 2 ? 65536 : (int64_t{1} << 32)) {}

  Status Ids(const std::vector<int>& ids) {
    out_.clear();
    for (int id : ids) {
      if (id < 0 || id >= limit_)
        return Status::InvalidArgument("--tokenizer " + t_.path() + ": id " + std::to_string(id) + " does not fit " +
                                       std::to_string(width_) + "-byte tokens");
      for (int b = 0; b < width_; ++b)
        out_.push_back(static_cast<unsigned char>((static_cast<uint32_t>(id) >> (8 * b)) & 0xFF));
    }
    PW_RETURN_IF_ERROR(WriteAll(fd_, out_, offset_ + count_ * width_, "tokens of " + what_));
    count_ += static_cast<int64_t>(ids.size());
    return Status::Ok();
  }

  // Appends text of the current document; `last`: nothing follows in it.
  // Line-based: every complete line is encoded (the last, partial one when
  // `last` or longer than a piece). Otherwise: pieces cut by SafeCut once
  // kPiece bytes are pending, the rest when `last`.
  Status Text(const char* data, size_t n, bool last) {
    pending_.append(data, n);
    if (t_.line_based()) {
      size_t begin = 0;
      for (size_t nl; (nl = pending_.find('\n', begin)) != std::string::npos; begin = nl + 1)
        if (nl > begin) PW_RETURN_IF_ERROR(Ids(t_.Encode(pending_.substr(begin, nl - begin))));
      pending_.erase(0, begin);
      while (pending_.size() >= kPiece) {
        const size_t cut = Utf8Cut(pending_, kPiece);
        PW_RETURN_IF_ERROR(Ids(t_.Encode(pending_.substr(0, cut))));
        pending_.erase(0, cut);
      }
      if (last && !pending_.empty()) PW_RETURN_IF_ERROR(Ids(t_.Encode(pending_)));
      if (last) pending_.clear();
      return Status::Ok();
    }
    while (!last && pending_.size() >= kPiece) {
      size_t cut = t_.SafeCut(pending_);
      if (cut == 0) {
        if (pending_.size() < 16 * kPiece) break;  // no word boundary yet: read on (up to 16 MiB)
        cut = Utf8Cut(pending_, 16 * kPiece);      // then cut at a character boundary
      }
      PW_RETURN_IF_ERROR(EncodePart(pending_.substr(0, cut), false));
      pending_.erase(0, cut);
    }
    if (last) {
      PW_RETURN_IF_ERROR(EncodePart(pending_, true));
      pending_.clear();
      started_ = false;
    }
    return Status::Ok();
  }

  int64_t count() const { return count_; }

 private:
  static constexpr size_t kPiece = size_t{1} << 20;

  Status EncodePart(const std::string& text, bool ends) {
    const std::vector<int> ids = t_.EncodePart(text, !started_, ends);
    started_ = true;
    return Ids(ids);
  }

  const Tokenizer& t_;
  const int width_;
  const int fd_;
  const int64_t offset_;
  const std::string what_;
  const int64_t limit_;
  std::string pending_;
  std::vector<unsigned char> out_;
  int64_t count_ = 0;
  bool started_ = false;  // a piece of the current document was encoded
};

}  // namespace

StatusOr<int64_t> TokenizeTextFile(const Tokenizer& tokenizer, const std::string& text_path, int width, int fd,
                                   int64_t offset, const std::string& text_field) {
  std::FILE* in = std::fopen(text_path.c_str(), "rb");
  if (!in) return Status::NotFound("--data " + text_path + ": cannot open: " + std::strerror(errno));
  constexpr size_t kRead = size_t{1} << 20;
  const int eot = tokenizer.end_of_text_id();
  if (!text_field.empty() && eot < 0) {
    std::fclose(in);
    return Status::InvalidArgument("--tokenizer " + tokenizer.path() +
                                   ": has no end-of-text token to separate the "
                                   "documents of JSON Lines --data " +
                                   text_path +
                                   " (tokenizer.json: a special added token <|endoftext|>, <|end_of_text|>, </s>, "
                                   "<eos> or <|im_end|>; SentencePiece: an eos piece)");
  }
  TokenSink sink(tokenizer, width, fd, offset, text_path);
  std::vector<char> chunk(kRead);
  Status st;
  bool eof = false;
  std::string line;  // JSON Lines: the line being read
  int64_t line_no = 0;
  auto document = [&](const std::string& l) -> Status {
    ++line_no;
    size_t b = l.find_first_not_of(" \t\r");
    if (b == std::string::npos) return Status::Ok();  // a blank line
    const std::string where = "--data " + text_path + " line " + std::to_string(line_no);
    nlohmann::json j = nlohmann::json::parse(l, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument(where + ": not a JSON object (JSON Lines)");
    auto it = j.find(text_field);
    if (it == j.end()) return Status::InvalidArgument(where + ": no field '" + text_field + "' (--text-field)");
    if (!it->is_string()) return Status::InvalidArgument(where + ": field '" + text_field + "' is not a string");
    const std::string& text = it->get_ref<const std::string&>();
    PW_RETURN_IF_ERROR(sink.Ids({eot}));
    return sink.Text(text.data(), text.size(), /*last=*/true);
  };
  while (st.ok() && !eof) {
    const size_t got = std::fread(chunk.data(), 1, kRead, in);
    if (got < kRead) eof = true;
    if (text_field.empty()) {
      st = sink.Text(chunk.data(), got, eof);
      continue;
    }
    size_t begin = 0;
    for (size_t i = 0; st.ok() && i < got; ++i) {
      if (chunk[i] != '\n') continue;
      line.append(chunk.data() + begin, i - begin);
      st = document(line);
      line.clear();
      begin = i + 1;
    }
    line.append(chunk.data() + begin, got - begin);
    if (st.ok() && eof && !line.empty()) st = document(line);
  }
  if (std::ferror(in)) st = Status::InvalidArgument("--data " + text_path + ": read error");
  std::fclose(in);
  PW_RETURN_IF_ERROR(st);
  return sink.count();
}

StatusOr<int64_t> WriteTokenFile(const Tokenizer& tokenizer, const std::string& text_path, const std::string& out_path,
                                 const std::string& text_field) {
  const std::string tmp = out_path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::InvalidArgument("-o " + out_path + ": cannot create " + tmp + ": " + std::strerror(errno));
  const bool wide = tokenizer.vocab_size() > 65536;
  const int width = wide ? 4 : 2;
  StatusOr<int64_t> count = TokenizeTextFile(tokenizer, text_path, width, fd, kLlmcHeaderInts * 4, text_field);
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
