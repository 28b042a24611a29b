// Chrome trace JSON, simulated or measured (viz/trace_reader.h ParseTrace,
// `show t.json`, `report`, diffs): parse, then the views `show` draws and
// the trace writer, whose output must read back.
#include "tests/fuzz/fuzz_util.h"
#include "viz/ascii_timeline.h"
#include "viz/chrome_trace.h"
#include "viz/svg_timeline.h"
#include "viz/trace_reader.h"

using namespace pw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  viz::TraceInfo info;
  StatusOr<viz::Timeline> t = viz::ParseTrace(fuzz::Text(data, size), "t.json", &info);
  if (!t.ok()) {
    fuzz::CheckPrintable(t.status().message());
    return 0;
  }
  viz::AsciiOptions narrow;
  narrow.width = 40;
  (void)viz::RenderAscii(*t, narrow);
  (void)viz::RenderAscii(*t);
  (void)viz::SvgDocument(*t);
  (void)viz::CriticalPath(*t);
  const std::string written = viz::ChromeTraceJson(*t, info.plan_hash);
  StatusOr<viz::Timeline> again = viz::ParseTrace(written, "written t.json");
  fuzz::Check(again.ok(), "a written trace does not read back", again.ok() ? "" : again.status().message());
  return 0;
}
