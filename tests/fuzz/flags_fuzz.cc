// Command-line values parsed by pipewright itself (not by CLI11): sizes
// (planner/explain.h ParseBytes: --memory-limit, --memory-reserve), and the
// names of recompute settings, dtypes and objectives. An accepted size must
// be a positive byte count.
#include "models/spec/footprint.h"
#include "planner/explain.h"
#include "planner/planner.h"
#include "tests/fuzz/fuzz_util.h"

using namespace pw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fuzz::Text(data, size);
  StatusOr<int64_t> bytes = ParseBytes(text);
  if (bytes.ok()) {
    fuzz::Check(*bytes > 0, "ParseBytes accepted a size that is not a positive byte count", text);
    (void)FormatBytes(*bytes);
  }
  (void)ParseRecompute(text);
  (void)ParsePrecision(text);
  (void)ParseObjective(text);
  return 0;
}
