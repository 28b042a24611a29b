#include "executor/data/data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "executor/data/tokenizer.h"

namespace pw::exec {

// A read-only mapping of a whole file, or bytes held in memory (tests).
class MappedFile {
 public:
  // Maps `fd` (size `bytes` > 0). The fd may be closed afterwards.
  static StatusOr<std::shared_ptr<const MappedFile>> Map(int fd, int64_t bytes, const std::string& what) {
    void* p = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return Status::InvalidArgument(what + ": mmap failed: " + std::strerror(errno));
    auto f = std::make_shared<MappedFile>();
    f->data_ = static_cast<const unsigned char*>(p);
    f->size_ = bytes;
    f->mapped_ = true;
    return std::shared_ptr<const MappedFile>(f);
  }
  static std::shared_ptr<const MappedFile> Hold(std::string bytes) {
    auto f = std::make_shared<MappedFile>();
    f->held_ = std::move(bytes);
    f->data_ = reinterpret_cast<const unsigned char*>(f->held_.data());
    f->size_ = static_cast<int64_t>(f->held_.size());
    return f;
  }
  ~MappedFile() {
    if (mapped_) ::munmap(const_cast<unsigned char*>(data_), static_cast<size_t>(size_));
  }
  const unsigned char* data() const { return data_; }
  int64_t size() const { return size_; }
  // Drops the pages of [offset, offset + len) from this process (they stay
  // in the page cache): what keeps the resident set bounded on huge files.
  void Release(int64_t offset, int64_t len) const {
    if (!mapped_ || len <= 0) return;
    static const int64_t page = ::sysconf(_SC_PAGESIZE);
    const int64_t begin = offset / page * page;
    const int64_t end = std::min(size_, offset + len);
    if (end > begin)
      ::madvise(const_cast<unsigned char*>(data_) + begin, static_cast<size_t>(end - begin), MADV_DONTNEED);
  }

 private:
  const unsigned char* data_ = nullptr;
  int64_t size_ = 0;
  bool mapped_ = false;
  std::string held_;
};

namespace {

// Little-endian reads (the token files' byte order, whatever the host's).
uint32_t ReadLe(const unsigned char* p, int width) {
  switch (width) {
    case 1:
      return p[0];
    case 2:
      return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8;
    default:
      return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
             static_cast<uint32_t>(p[3]) << 24;
  }
}

// 64-bit mixer (splitmix64's finaliser, Steele et al. 2014).
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A keyed pseudo-random permutation of [0, n): a 6-round balanced Feistel
// network on 2h bits (2^(2h) >= n, so fewer than 4 expected walks), applied
// until the value falls inside [0, n) ("cycle walking", Black & Rogaway,
// "Ciphers with Arbitrary Finite Domains", 2002). O(1) memory for any n.
int64_t Permute(int64_t x, int64_t n, uint64_t key) {
  if (n <= 1) return 0;
  int bits = 0;
  while ((int64_t{1} << bits) < n) ++bits;
  const int h = (bits + 1) / 2;
  const uint64_t mask = (uint64_t{1} << h) - 1;
  uint64_t v = static_cast<uint64_t>(x);
  do {
    uint64_t l = v >> h, r = v & mask;
    for (int round = 0; round < 6; ++round) {
      const uint64_t f = Mix(key ^ (static_cast<uint64_t>(round) << 56) ^ r) & mask;
      const uint64_t nl = r;
      r = l ^ f;
      l = nl;
    }
    v = (l << h) | r;
  } while (v >= static_cast<uint64_t>(n));
  return static_cast<int64_t>(v);
}

// Refuses what cannot be mapped: a directory, a device or pipe (no end, no
// size), a missing file.
StatusOr<int64_t> RegularFileBytes(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return Status::NotFound("--data " + path + ": cannot open");
  if (std::filesystem::is_directory(status))
    return Status::InvalidArgument("--data " + path + ": is a directory; give a text or token file");
  if (!std::filesystem::is_regular_file(status))
    return Status::InvalidArgument("--data " + path +
                                   ": not a regular file (a device or pipe has no end to map; write the data to "
                                   "a file first)");
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec) return Status::NotFound("--data " + path + ": cannot open: " + ec.message());
  return static_cast<int64_t>(bytes);
}

StatusOr<std::shared_ptr<const MappedFile>> MapPath(const std::string& path, int64_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("--data " + path + ": cannot open: " + std::strerror(errno));
  auto m = MappedFile::Map(fd, bytes, "--data " + path);
  ::close(fd);
  return m;
}

// Reads the first `n` bytes (fewer if the file is shorter).
std::string Head(const std::string& path, size_t n) {
  std::string out(n, '\0');
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  const ssize_t got = ::pread(fd, out.data(), n, 0);
  ::close(fd);
  out.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return out;
}

// The first token >= vocab in [0, count) of the tokens at `offset` bytes of
// `path`, by 1 MiB preads (not through the mapping: bounded memory). -1 if none.
StatusOr<int64_t> FirstTokenAtOrAbove(const std::string& path, int64_t offset, int64_t count, int width, int64_t vocab,
                                      uint32_t* value) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("--data " + path + ": cannot open: " + std::strerror(errno));
  std::vector<unsigned char> buf(size_t{1} << 20);
  const int64_t per = static_cast<int64_t>(buf.size()) / width;
  int64_t found = -1;
  for (int64_t first = 0; first < count && found < 0; first += per) {
    const int64_t n = std::min(per, count - first);
    const ssize_t got = ::pread(fd, buf.data(), static_cast<size_t>(n * width), offset + first * width);
    if (got != n * width) {
      ::close(fd);
      return Status::InvalidArgument("--data " + path + ": read failed at byte " +
                                     std::to_string(offset + first * width));
    }
    // The largest id of the piece first (a loop compilers vectorise), the
    // position only when it is out of range.
    uint32_t max_id = 0;
    if (width == 2) {
      for (int64_t i = 0; i < n; ++i)
        max_id =
            std::max<uint32_t>(max_id, static_cast<uint32_t>(buf[2 * i]) | static_cast<uint32_t>(buf[2 * i + 1]) << 8);
    } else {
      for (int64_t i = 0; i < n; ++i) max_id = std::max(max_id, ReadLe(buf.data() + i * 4, 4));
    }
    if (max_id < vocab) continue;
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t t = ReadLe(buf.data() + i * width, width);
      if (t >= vocab) {
        found = first + i;
        *value = t;
        break;
      }
    }
  }
  ::close(fd);
  return found;
}

}  // namespace

Status ValidateDataSpec(const DataSpec& spec) {
  if (spec.order != "random" && spec.order != "sequential")
    return Status::InvalidArgument("--data-order '" + spec.order + "': must be random or sequential");
  if (!spec.token_dtype.empty() && spec.token_dtype != "uint16" && spec.token_dtype != "uint32")
    return Status::InvalidArgument("--token-dtype '" + spec.token_dtype + "': must be uint16 or uint32");
  if (!spec.token_dtype.empty() && !spec.tokenizer.empty())
    return Status::InvalidArgument("--tokenizer " + spec.tokenizer + " with --token-dtype " + spec.token_dtype +
                                   ": a tokenizer reads text, --token-dtype names pretokenized data; give one");
  return Status::Ok();
}

StatusOr<TextDataset> TextDataset::Finish(TextDataset ds, int seq, uint64_t seed, const std::string& order) {
  if (seq < 1) return Status::InvalidArgument("sequence length must be >= 1, got " + std::to_string(seq));
  if (ds.num_tokens_ < seq + 1)
    return Status::InvalidArgument(
        std::to_string(ds.num_tokens_) +
        (ds.width_ == 1 && ds.description_ == "bytes of text" ? " bytes, need at least " : " tokens, need at least ") +
        std::to_string(seq + 1) + " for sequence length " + std::to_string(seq));
  ds.seq_ = seq;
  ds.seed_ = seed;
  ds.sequential_ = order == "sequential";
  ds.num_windows_ = (ds.num_tokens_ - 1) / seq;
  return ds;
}

StatusOr<TextDataset> TextDataset::FromBytes(std::string bytes, int seq, uint64_t seed) {
  TextDataset ds;
  ds.file_ = MappedFile::Hold(std::move(bytes));
  ds.base_ = ds.file_->data();
  ds.width_ = 1;
  ds.num_tokens_ = ds.num_bytes_ = ds.file_->size();
  ds.description_ = "bytes of text";
  return Finish(std::move(ds), seq, seed, "random");
}

StatusOr<TextDataset> TextDataset::FromTokens(const std::vector<uint32_t>& tokens, int seq, uint64_t seed,
                                              const std::string& order) {
  std::string bytes(tokens.size() * 4, '\0');
  for (size_t i = 0; i < tokens.size(); ++i)
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((tokens[i] >> (8 * b)) & 0xFF);
  TextDataset ds;
  ds.file_ = MappedFile::Hold(std::move(bytes));
  ds.base_ = ds.file_->data();
  ds.width_ = 4;
  ds.num_tokens_ = static_cast<int64_t>(tokens.size());
  ds.num_bytes_ = ds.file_->size();
  ds.description_ = "uint32 tokens";
  return Finish(std::move(ds), seq, seed, order);
}

StatusOr<TextDataset> TextDataset::Open(const std::string& path, int seq, uint64_t seed) {
  DataSpec spec;
  spec.path = path;
  return Open(spec, seq, seed, 256);
}

StatusOr<TextDataset> TextDataset::Open(const DataSpec& spec, int seq, uint64_t seed, int64_t vocab_size) {
  PW_RETURN_IF_ERROR(ValidateDataSpec(spec));
  const std::string& path = spec.path;
  PW_ASSIGN_OR_RETURN(int64_t bytes, RegularFileBytes(path));
  TextDataset ds;
  ds.num_bytes_ = bytes;
  const std::string what = "--data " + path;

  // --tokenizer: the text, tokenized into an unlinked temporary file.
  if (!spec.tokenizer.empty()) {
    PW_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::Load(spec.tokenizer));
    if (tok->vocab_size() != vocab_size)
      return Status::InvalidArgument("--tokenizer " + spec.tokenizer + " has a vocabulary of " +
                                     std::to_string(tok->vocab_size()) + " pieces but the plan's model.vocab_size is " +
                                     std::to_string(vocab_size) +
                                     "; they must be equal (plan with a model config whose "
                                     "vocab_size is " +
                                     std::to_string(tok->vocab_size()) + ")");
    if (bytes > kMaxRunTextBytes)
      return Status::InvalidArgument(what + ": " + std::to_string(bytes) +
                                     " bytes of text is more than `run --tokenizer` "
                                     "tokenizes on every rank before step 1 (" +
                                     std::to_string(kMaxRunTextBytes) +
                                     " bytes); tokenize once with `pipewright tokenize --tokenizer " + spec.tokenizer +
                                     " --data " + path + " -o tokens.bin` and pass --data tokens.bin");
    const char* tmpdir = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/pipewright-tokens-XXXXXX";
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0)
      return Status::InvalidArgument("--tokenizer: cannot create a temporary file " + tmpl + ": " +
                                     std::strerror(errno));
    ::unlink(tmpl.c_str());  // freed when the mapping and fd go
    const int width = tok->vocab_size() <= 65536 ? 2 : 4;
    StatusOr<int64_t> count = TokenizeTextFile(*tok, path, width, fd, 0);
    if (!count.ok()) {
      ::close(fd);
      return count.status();
    }
    if (*count == 0) {
      ::close(fd);
      return Status::InvalidArgument(what + ": the tokenizer made no tokens of it");
    }
    StatusOr<std::shared_ptr<const MappedFile>> m = MappedFile::Map(fd, *count * width, what + " (tokenized)");
    ::close(fd);
    if (!m.ok()) return m.status();
    ds.file_ = *m;
    ds.base_ = ds.file_->data();
    ds.width_ = width;
    ds.num_tokens_ = *count;
    ds.description_ = "text, " + std::to_string(*count) + " tokens of " + spec.tokenizer;
    return Finish(std::move(ds), seq, seed, spec.order);
  }

  // llm.c header?
  int64_t offset = 0;
  int width = 0;
  const std::string head = Head(path, kLlmcHeaderInts * 4);
  if (head.size() >= 12) {
    const auto* h = reinterpret_cast<const unsigned char*>(head.data());
    const int32_t magic = static_cast<int32_t>(ReadLe(h, 4));
    if (magic == kLlmcMagicU16 || magic == kLlmcMagicU32) {
      const int32_t version = static_cast<int32_t>(ReadLe(h + 4, 4));
      const int64_t count = static_cast<int32_t>(ReadLe(h + 8, 4));
      const int32_t want_version = magic == kLlmcMagicU16 ? 1 : 7;
      if (version != want_version)
        return Status::InvalidArgument(what + ": llm.c header (magic " + std::to_string(magic) + ") with version " +
                                       std::to_string(version) + "; expected " + std::to_string(want_version));
      width = magic == kLlmcMagicU16 ? 2 : 4;
      offset = kLlmcHeaderInts * 4;
      if (count < 0 || offset + count * width != bytes)
        return Status::InvalidArgument(what + ": llm.c header says " + std::to_string(count) + " tokens of " +
                                       std::to_string(width) + " bytes after the 1024-byte header, but the file has " +
                                       std::to_string(bytes) + " bytes (" + std::to_string(offset + count * width) +
                                       " expected): truncated or not "
                                       "an llm.c token file");
      const std::string dtype = width == 2 ? "uint16" : "uint32";
      if (!spec.token_dtype.empty() && spec.token_dtype != dtype)
        return Status::InvalidArgument(what + ": its llm.c header (magic " + std::to_string(magic) + ") says " + dtype +
                                       " tokens but --token-dtype is " + spec.token_dtype);
      ds.description_ = dtype + " tokens (llm.c header)";
    }
  }
  if (width == 0 && !spec.token_dtype.empty()) {
    width = spec.token_dtype == "uint16" ? 2 : 4;
    if (bytes % width != 0)
      return Status::InvalidArgument(what + ": " + std::to_string(bytes) + " bytes is not a whole number of " +
                                     spec.token_dtype + " tokens (--token-dtype " + spec.token_dtype + ")");
    ds.description_ = spec.token_dtype + " tokens";
  }
  if (width == 0) {
    // Text as bytes. A .bin file is almost surely tokens: refuse to read it as text.
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ".bin") == 0)
      return Status::InvalidArgument(what +
                                     ": a .bin file without an llm.c header: give --token-dtype uint16 or "
                                     "uint32 for a flat token array (nanoGPT's train.bin is uint16), or rename it "
                                     "to read it as text bytes");
    if (vocab_size < 256)
      return Status::InvalidArgument("plan field 'model.vocab_size' is " + std::to_string(vocab_size) + ": " + what +
                                     " is read as bytes (no --tokenizer), so the model needs vocab_size >= 256");
    width = 1;
    ds.description_ = "bytes of text";
  }
  ds.width_ = width;
  ds.num_tokens_ = (bytes - offset) / width;
  if (ds.num_tokens_ < seq + 1) return Finish(std::move(ds), seq, seed, spec.order).status().WithContext(what);
  if (width > 1) {
    // One scan, bounded memory, before any compute.
    uint32_t value = 0;
    PW_ASSIGN_OR_RETURN(int64_t bad, FirstTokenAtOrAbove(path, offset, ds.num_tokens_, width, vocab_size, &value));
    if (bad >= 0)
      return Status::InvalidArgument(what + ": token " + std::to_string(value) + " at token offset " +
                                     std::to_string(bad) + " (byte offset " + std::to_string(offset + bad * width) +
                                     ") is >= the model's vocab_size " + std::to_string(vocab_size));
  }
  PW_ASSIGN_OR_RETURN(ds.file_, MapPath(path, bytes));
  ds.base_ = ds.file_->data() + offset;
  auto done = Finish(std::move(ds), seq, seed, spec.order);
  if (!done.ok()) return done.status().WithContext(what);
  return done;
}

uint32_t TextDataset::TokenAt(int64_t i) const { return ReadLe(base_ + i * width_, width_); }

int64_t TextDataset::WindowOfSample(int64_t sample) const {
  const int64_t epoch = sample / num_windows_;
  const int64_t i = sample % num_windows_;
  if (sequential_) return i;
  return Permute(i, num_windows_, Mix(seed_ * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epoch)));
}

TokenBatch TextDataset::Batch(int64_t step, int global_rows, int row_begin, int row_count) const {
  TokenBatch b;
  b.rows = row_count;
  b.seq = seq_;
  b.inputs.resize(static_cast<size_t>(row_count) * seq_);
  b.targets.resize(static_cast<size_t>(row_count) * seq_);
  for (int r = 0; r < row_count; ++r) {
    const int64_t sample = step * global_rows + row_begin + r;
    const int64_t start = WindowOfSample(sample) * seq_;
    for (int t = 0; t < seq_; ++t) {
      b.inputs[static_cast<size_t>(r) * seq_ + t] = TokenAt(start + t);
      b.targets[static_cast<size_t>(r) * seq_ + t] = TokenAt(start + t + 1);
    }
    file_->Release(base_ - file_->data() + start * width_, static_cast<int64_t>(seq_ + 1) * width_);
  }
  return b;
}

}  // namespace pw::exec
