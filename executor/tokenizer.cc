#include "executor/tokenizer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <sentencepiece_processor.h>

#include "executor/data.h"

namespace pw::exec {

Tokenizer::Tokenizer() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::NotFound("--tokenizer " + path + ": no such file (a SentencePiece .model, e.g. from spm_train)");
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->path_ = path;
  const auto st = t->sp_->Load(path);
  if (!st.ok())
    return Status::InvalidArgument("--tokenizer " + path + ": not a SentencePiece model: " + st.ToString());
  return t;
}

int64_t Tokenizer::vocab_size() const { return sp_->GetPieceSize(); }

std::vector<int> Tokenizer::Encode(const std::string& text) const {
  std::vector<int> ids;
  sp_->Encode(text, &ids).IgnoreError();  // fails only without a loaded model
  return ids;
}

std::string Tokenizer::Decode(const std::vector<int>& ids) const {
  std::vector<int> in_range;
  in_range.reserve(ids.size());
  for (int id : ids)
    if (id >= 0 && id < vocab_size()) in_range.push_back(id);
  std::string text;
  sp_->Decode(in_range, &text).IgnoreError();
  return text;
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
