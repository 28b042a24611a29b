// Safetensors files (models/spec/safetensors.h File::Open, `run --init-from
// DIR`): the input is written to a file, opened (header checks), and every
// tensor is read into floats and doubles.
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "models/spec/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

using namespace pw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/pw_safetensors_fuzz_" + std::to_string(getpid()) +
           ".safetensors";
  }();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  StatusOr<std::unique_ptr<safetensors::File>> file = safetensors::File::Open(path);
  if (!file.ok()) {
    fuzz::CheckPrintable(file.status().message());
    return 0;
  }
  for (const auto& [name, info] : (*file)->tensors()) {
    const int64_t n = info.numel();
    fuzz::Check(n >= 0 && static_cast<uint64_t>(n) * safetensors::DtypeBytes(info.dtype) == info.end - info.begin,
                "an accepted tensor's size disagrees with its byte range", name);
    std::vector<float> fl(static_cast<size_t>(n));
    std::vector<double> db(static_cast<size_t>(n));
    fuzz::Check((*file)->Read(name, fl.data(), n).ok(), "an accepted tensor cannot be read as float", name);
    fuzz::Check((*file)->Read(name, db.data(), n).ok(), "an accepted tensor cannot be read as double", name);
  }
  return 0;
}
