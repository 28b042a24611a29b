// Safetensors files (https://huggingface.co/docs/safetensors): read and write
// without LibTorch. A file is an 8-byte little-endian header length N, N
// bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
//    ..., "__metadata__": {"<key>": "<string>", ...}}
// (offsets relative to the data section that follows the header), then the
// data section: the tensors' bytes, row-major, little-endian.
//
// A Hugging Face model directory holds either one `model.safetensors` or the
// shards `model-0000k-of-0000n.safetensors` with `model.safetensors.index.json`
// ({"metadata": {"total_size": B}, "weight_map": {"<name>": "<shard file>"}}).
//
// Dtypes understood: F32, F64, F16 (IEEE binary16), BF16 (bfloat16). Every
// F16 and BF16 value, and every F32 value, is exactly representable in
// float32 and float64, so reading them into either is exact.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace pw::safetensors {

enum class Dtype { kF32, kF64, kF16, kBF16 };

// "F32", "F64", "F16", "BF16".
const char* DtypeName(Dtype dtype);
// Bytes per element: 4, 8, 2, 2.
int DtypeBytes(Dtype dtype);

// IEEE binary16 bits -> float (exact; subnormals, infinities and NaN kept).
float HalfToFloat(uint16_t bits);
// bfloat16 bits (the top 16 bits of a float32) -> float (exact).
float BFloat16ToFloat(uint16_t bits);

// One tensor's header entry.
struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;   // may be empty (a scalar: one element)
  uint64_t begin = 0, end = 0;  // byte offsets into the data section, [begin, end)
  int64_t numel() const;        // product of shape (1 for a scalar)
};

// One memory-mapped .safetensors file. Open reads and checks the header
// only; a tensor's bytes are touched when it is read.
class File {
 public:
  // Maps `path` and validates the header strictly. Errors name the file and,
  // where there is one, the tensor and field: NotFound (cannot be opened);
  // InvalidArgument for a file shorter than 8 bytes, a header length beyond
  // the file, a header that is not JSON or not an object, a tensor entry
  // without `dtype`, `shape` or `data_offsets` (or of the wrong JSON type), an
  // unknown dtype, a negative dimension, data_offsets with begin > end or end
  // beyond the data section (a truncated file), two tensors whose byte ranges
  // overlap, shape x dtype size != end - begin, or bytes in the data section
  // that no tensor covers.
  static StatusOr<std::unique_ptr<File>> Open(const std::string& path);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  // Tensors by name.
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  // `__metadata__` (an empty object when absent).
  const nlohmann::json& metadata() const { return metadata_; }
  // The entry of `name`, or nullptr.
  const TensorInfo* Find(const std::string& name) const;
  // Raw bytes of a tensor (end - begin bytes, little-endian).
  const unsigned char* Data(const TensorInfo& info) const;

  // Converts tensor `name` into `out` (numel values, row-major). Errors:
  // NotFound naming the file and tensor; InvalidArgument when `numel` is not
  // the tensor's element count. F64 into float rounds to nearest; all other
  // conversions are exact.
  Status Read(const std::string& name, float* out, int64_t numel) const;
  Status Read(const std::string& name, double* out, int64_t numel) const;

 private:
  File() = default;
  std::string path_;
  int fd_ = -1;
  void* map_ = nullptr;
  uint64_t size_ = 0;
  uint64_t data_start_ = 0;  // 8 + N
  std::map<std::string, TensorInfo> tensors_;
  nlohmann::json metadata_ = nlohmann::json::object();
};

// A model directory: `model.safetensors`, or the shards listed by
// `model.safetensors.index.json` (preferred when both exist).
class Checkpoint {
 public:
  // Opens and validates every file the directory uses (File::Open's checks;
  // for an index also: not JSON, no `weight_map` object, a shard file name
  // that is not a plain file name in `dir`, a tensor listed for a shard that
  // does not hold it). NotFound when `dir` has neither file.
  static StatusOr<Checkpoint> Open(const std::string& dir);

  // The file holding `name`, or nullptr.
  const File* FileOf(const std::string& name) const;
  // Shape and dtype of `name`, or nullptr.
  const TensorInfo* Find(const std::string& name) const;
  // Names of every tensor, sorted.
  std::vector<std::string> Names() const;
  // Number of files (1 for a single file).
  int NumFiles() const { return static_cast<int>(files_.size()); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::shared_ptr<File>> files_;
  std::map<std::string, const File*> where_;
};

// A tensor to write: `bytes` of `dtype` data (little-endian, row-major),
// numel(shape) x DtypeBytes(dtype) long.
struct TensorData {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

// Writes one .safetensors file at `path` atomically (path + ".tmp", then
// rename): tensors in the order given, the header padded with spaces to a
// multiple of 8 bytes. `metadata`: string values only (may be empty).
// Errors: InvalidArgument for a duplicate or empty name, or a byte count
// that is not shape x dtype size (naming the tensor); Internal naming the
// file when it cannot be written.
Status WriteFile(const std::string& path, const std::vector<const TensorData*>& tensors,
                 const std::map<std::string, std::string>& metadata);

// Writes a model directory's weights into the existing directory `dir`:
// `model.safetensors` when the total data is at most `max_shard_bytes`,
// else shards model-0000k-of-0000n.safetensors of at most `max_shard_bytes`
// each (a single larger tensor gets a shard to itself), in the order given,
// plus model.safetensors.index.json. Each file is written atomically.
// Returns the number of files holding tensors. Errors: those of WriteFile;
// InvalidArgument for max_shard_bytes < 1.
StatusOr<int> WriteCheckpoint(const std::string& dir, const std::vector<TensorData>& tensors, int64_t max_shard_bytes,
                              const std::map<std::string, std::string>& metadata);

// Default shard limit of WriteCheckpoint: 2 GiB.
inline constexpr int64_t kDefaultMaxShardBytes = int64_t{2} << 30;

}  // namespace pw::safetensors
