#include "models/spec/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/json_text.h"

namespace pw::safetensors {

namespace {

static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE float and double expected");

bool HostIsLittleEndian() {
  const uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

StatusOr<Dtype> ParseDtype(const std::string& s) {
  if (s == "F32") return Dtype::kF32;
  if (s == "F64") return Dtype::kF64;
  if (s == "F16") return Dtype::kF16;
  if (s == "BF16") return Dtype::kBF16;
  return Status::InvalidArgument("unknown dtype '" + s + "' (understood: F32, F64, F16, BF16)");
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

template <typename T>
Status ReadInto(const File& file, const std::string& name, T* out, int64_t numel) {
  const TensorInfo* info = file.Find(name);
  if (info == nullptr) return Status::NotFound(file.path() + ": no tensor '" + name + "'");
  if (info->numel() != numel)
    return Status::InvalidArgument(file.path() + ": tensor '" + name + "' has " + std::to_string(info->numel()) +
                                   " elements (shape " + ShapeText(info->shape) + "), " + std::to_string(numel) +
                                   " expected");
  const unsigned char* p = file.Data(*info);
  for (int64_t i = 0; i < numel; ++i) {
    switch (info->dtype) {
      case Dtype::kF32: {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = static_cast<T>(v);
        break;
      }
      case Dtype::kF64: {
        double v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = static_cast<T>(v);
        break;
      }
      case Dtype::kF16:
      case Dtype::kBF16: {
        uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        out[i] = static_cast<T>(info->dtype == Dtype::kF16 ? HalfToFloat(bits) : BFloat16ToFloat(bits));
        break;
      }
    }
  }
  return Status::Ok();
}

Status WriteAll(const std::string& path, std::FILE* f, const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, f) != n)
    return Status::Internal("writing " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

const char* DtypeName(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32:
      return "F32";
    case Dtype::kF64:
      return "F64";
    case Dtype::kF16:
      return "F16";
    case Dtype::kBF16:
      return "BF16";
  }
  return "?";
}

int DtypeBytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32:
      return 4;
    case Dtype::kF64:
      return 8;
    case Dtype::kF16:
    case Dtype::kBF16:
      return 2;
  }
  return 0;
}

float HalfToFloat(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal: mant x 2^-24
  } else if (exp == 31) {
    v = mant == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);  // (1024 + mant) x 2^(exp-15-10)
  }
  return sign ? -v : v;
}

float BFloat16ToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

int64_t TensorInfo::numel() const {
  // A zero dimension first: [2^62, 2^62, 0] is empty, and multiplying in
  // file order would overflow (found writing tests/fuzz/safetensors_fuzz). Other
  // shapes File::Open accepted span at most the file's bytes.
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ------------------------------------------------------------------ File ---

StatusOr<std::unique_ptr<File>> File::Open(const std::string& path) {
  if (!HostIsLittleEndian()) return Status::Internal(path + ": safetensors reading needs a little-endian host");
  std::unique_ptr<File> f(new File());
  f->path_ = path;
  f->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f->fd_ < 0) return Status::NotFound("cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(f->fd_, &st) != 0) return Status::NotFound("cannot stat " + path + ": " + std::strerror(errno));
  f->size_ = static_cast<uint64_t>(st.st_size);
  const auto bad = [&path](const std::string& m) { return Status::InvalidArgument(path + ": " + m); };
  if (f->size_ < 8) return bad("file is " + std::to_string(f->size_) + " bytes, shorter than the 8-byte header length");
  f->map_ = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, f->fd_, 0);
  if (f->map_ == MAP_FAILED) {
    f->map_ = nullptr;
    return Status::Internal("cannot map " + path + ": " + std::strerror(errno));
  }
  const auto* bytes = static_cast<const unsigned char*>(f->map_);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > f->size_ - 8)
    return bad("header length " + std::to_string(n) + " is beyond the file (" + std::to_string(f->size_) + " bytes)");
  f->data_start_ = 8 + n;
  const uint64_t data_size = f->size_ - f->data_start_;
  StatusOr<nlohmann::json> parsed = ParseJsonText(std::string(reinterpret_cast<const char*>(bytes + 8), n), "header");
  if (!parsed.ok()) return bad("header is not JSON: " + parsed.status().message());
  const nlohmann::json header = std::move(*parsed);
  if (!header.is_object()) return bad("header is not a JSON object");
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (!it->is_object()) return bad("'__metadata__' is not an object");
      for (auto m = it->begin(); m != it->end(); ++m)
        if (!m->is_string()) return bad("'__metadata__." + m.key() + "' is not a string");
      f->metadata_ = *it;
      continue;
    }
    const auto tbad = [&](const std::string& m) { return bad("tensor '" + name + "': " + m); };
    if (!it->is_object()) return tbad("entry is not an object");
    for (const char* field : {"dtype", "shape", "data_offsets"})
      if (!it->contains(field)) return tbad(std::string("missing field '") + field + "'");
    TensorInfo info;
    info.name = name;
    if (!(*it)["dtype"].is_string()) return tbad("field 'dtype' is not a string");
    StatusOr<Dtype> dtype = ParseDtype((*it)["dtype"].get<std::string>());
    if (!dtype.ok()) return tbad("field 'dtype': " + dtype.status().message());
    info.dtype = *dtype;
    const nlohmann::json& shape = (*it)["shape"];
    if (!shape.is_array()) return tbad("field 'shape' is not an array");
    for (const auto& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return tbad("field 'shape' holds " + d.dump() + ", not a non-negative integer");
      info.shape.push_back(d.get<int64_t>());
    }
    const nlohmann::json& off = (*it)["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      return tbad("field 'data_offsets' is " + off.dump() + ", not [begin, end] of non-negative integers");
    info.begin = off[0].get<uint64_t>();
    info.end = off[1].get<uint64_t>();
    const std::string offs = "[" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "]";
    if (info.begin > info.end) return tbad("field 'data_offsets' " + offs + ": begin > end");
    if (info.end > data_size)
      return tbad("field 'data_offsets' " + offs + " is beyond the data section (" + std::to_string(data_size) +
                  " bytes: truncated file?)");
    // Overflow-safe in long double (a zero dimension makes it 0; a product
    // beyond the range is inf, never equal to a byte count).
    long double want = DtypeBytes(info.dtype);
    for (int64_t d : info.shape) want *= static_cast<long double>(d);
    if (want != static_cast<long double>(info.end - info.begin))
      return tbad("shape " + ShapeText(info.shape) + " x " + DtypeName(info.dtype) + " is " +
                  std::to_string(static_cast<unsigned long long>(want)) + " bytes but 'data_offsets' " + offs +
                  " span " + std::to_string(info.end - info.begin));
    f->tensors_.emplace(name, std::move(info));
  }
  // Byte ranges: no overlap, and together they cover the data section.
  std::vector<const TensorInfo*> order;
  for (const auto& [name, info] : f->tensors_) order.push_back(&info);
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo* t : order) {
    if (t->begin == t->end) continue;  // empty tensors occupy no bytes
    if (prev != nullptr && t->begin < prev->end)
      return bad("tensors '" + prev->name + "' and '" + t->name + "' overlap (data_offsets [" +
                 std::to_string(prev->begin) + ", " + std::to_string(prev->end) + "] and [" + std::to_string(t->begin) +
                 ", " + std::to_string(t->end) + "])");
    covered += t->end - t->begin;
    prev = t;
  }
  if (covered != data_size)
    return bad("the data section is " + std::to_string(data_size) + " bytes but the tensors cover " +
               std::to_string(covered));
  return f;
}

File::~File() {
  if (map_ != nullptr) ::munmap(map_, size_);
  if (fd_ >= 0) ::close(fd_);
}

const TensorInfo* File::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const unsigned char* File::Data(const TensorInfo& info) const {
  return static_cast<const unsigned char*>(map_) + data_start_ + info.begin;
}

Status File::Read(const std::string& name, float* out, int64_t numel) const {
  return ReadInto(*this, name, out, numel);
}
Status File::Read(const std::string& name, double* out, int64_t numel) const {
  return ReadInto(*this, name, out, numel);
}

// ------------------------------------------------------------ Checkpoint ---

StatusOr<Checkpoint> Checkpoint::Open(const std::string& dir) {
  namespace fs = std::filesystem;
  Checkpoint c;
  c.dir_ = dir;
  const std::string index = dir + "/model.safetensors.index.json", single = dir + "/model.safetensors";
  std::error_code ec;
  if (fs::exists(index, ec)) {
    nlohmann::json j;
    {
      std::ifstream in(index);
      if (!in) return Status::NotFound("cannot open " + index);
      std::stringstream ss;
      ss << in.rdbuf();
      PW_ASSIGN_OR_RETURN(j, ParseJsonText(ss.str(), index));
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      return Status::InvalidArgument(index + ": missing field 'weight_map' (an object of tensor -> shard file)");
    std::map<std::string, const File*> opened;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string()) return Status::InvalidArgument(index + ": weight_map['" + it.key() + "'] is not a string");
      const std::string shard = it->get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
        return Status::InvalidArgument(index + ": weight_map['" + it.key() + "'] = '" + shard +
                                       "' is not a file name in " + dir);
      auto o = opened.find(shard);
      if (o == opened.end()) {
        PW_ASSIGN_OR_RETURN(std::unique_ptr<File> f, File::Open(dir + "/" + shard));
        c.files_.push_back(std::move(f));
        o = opened.emplace(shard, c.files_.back().get()).first;
      }
      if (o->second->Find(it.key()) == nullptr)
        return Status::InvalidArgument(index + ": weight_map puts tensor '" + it.key() + "' in " + shard +
                                       ", which does not hold it");
      c.where_[it.key()] = o->second;
    }
    return c;
  }
  if (!fs::exists(single, ec))
    return Status::NotFound(dir + " holds neither model.safetensors nor model.safetensors.index.json");
  PW_ASSIGN_OR_RETURN(std::unique_ptr<File> f, File::Open(single));
  c.files_.push_back(std::move(f));
  for (const auto& [name, info] : c.files_[0]->tensors()) c.where_[name] = c.files_[0].get();
  return c;
}

const File* Checkpoint::FileOf(const std::string& name) const {
  auto it = where_.find(name);
  return it == where_.end() ? nullptr : it->second;
}

const TensorInfo* Checkpoint::Find(const std::string& name) const {
  const File* f = FileOf(name);
  return f == nullptr ? nullptr : f->Find(name);
}

std::vector<std::string> Checkpoint::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, file] : where_) out.push_back(name);
  return out;
}

// --------------------------------------------------------------- writing ---

Status WriteFile(const std::string& path, const std::vector<const TensorData*>& tensors,
                 const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const TensorData* t : tensors) {
    if (t->name.empty() || t->name == "__metadata__")
      return Status::InvalidArgument(path + ": tensor name '" + t->name + "' is not allowed");
    if (!seen.insert(t->name).second) return Status::InvalidArgument(path + ": tensor '" + t->name + "' given twice");
    int64_t numel = 1;
    for (int64_t d : t->shape) {
      if (d < 0) return Status::InvalidArgument(path + ": tensor '" + t->name + "': negative dimension");
      numel *= d;
    }
    if (static_cast<uint64_t>(numel) * DtypeBytes(t->dtype) != t->bytes.size())
      return Status::InvalidArgument(path + ": tensor '" + t->name + "': shape " + ShapeText(t->shape) + " x " +
                                     DtypeName(t->dtype) + " is not " + std::to_string(t->bytes.size()) + " bytes");
    header[t->name] = {
        {"dtype", DtypeName(t->dtype)}, {"shape", t->shape}, {"data_offsets", {offset, offset + t->bytes.size()}}};
    offset += t->bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::Internal("cannot create " + tmp + ": " + std::strerror(errno));
  Status st = WriteAll(tmp, f, len, 8);
  if (st.ok()) st = WriteAll(tmp, f, text.data(), text.size());
  for (const TensorData* t : tensors)
    if (st.ok()) st = WriteAll(tmp, f, t->bytes.data(), t->bytes.size());
  if (std::fclose(f) != 0 && st.ok()) st = Status::Internal("closing " + tmp + ": " + std::strerror(errno));
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    st = Status::Internal("renaming " + tmp + " to " + path + ": " + std::strerror(errno));
  if (!st.ok()) std::remove(tmp.c_str());
  return st;
}

StatusOr<int> WriteCheckpoint(const std::string& dir, const std::vector<TensorData>& tensors, int64_t max_shard_bytes,
                              const std::map<std::string, std::string>& metadata) {
  if (max_shard_bytes < 1)
    return Status::InvalidArgument("shard size limit " + std::to_string(max_shard_bytes) + ": must be >= 1 byte");
  std::vector<std::vector<const TensorData*>> shards(1);
  int64_t total = 0, in_shard = 0;
  for (const TensorData& t : tensors) {
    const int64_t b = static_cast<int64_t>(t.bytes.size());
    if (!shards.back().empty() && in_shard + b > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(&t);
    in_shard += b;
    total += b;
  }
  if (shards.size() == 1) {
    PW_RETURN_IF_ERROR(WriteFile(dir + "/model.safetensors", shards[0], metadata));
    return 1;
  }
  const int n = static_cast<int>(shards.size());
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (int k = 0; k < n; ++k) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", k + 1, n);
    PW_RETURN_IF_ERROR(WriteFile(dir + "/" + name, shards[k], metadata));
    for (const TensorData* t : shards[k]) weight_map[t->name] = name;
  }
  nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  const std::string path = dir + "/model.safetensors.index.json", tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << index.dump(2) << "\n";
    if (!out) return Status::Internal("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::Internal("renaming " + tmp + " to " + path + ": " + std::strerror(errno));
  return n;
}

}  // namespace pw::safetensors
