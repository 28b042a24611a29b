// Chrome Trace / Perfetto JSON of a timeline, in the pipewright trace format
// (schedules/trace_format.h): one process per rank, threads "compute" and
// "comm", complete events with real durations in µs, a flow arrow from each
// SEND to its RECV, and a "memory" counter track per rank. A thin adapter
// over the one trace writer (schedules/trace_writer.h), which the executor's
// measured trace uses too.
#pragma once

#include <string>

#include "viz/timeline.h"

namespace pw::viz {

// Returns the trace JSON text of `t` (kind t.kind; seconds in the timeline,
// µs rounded to the ns in the file; deterministic, 1 event per line,
// trailing newline). Each rank's compute and comm blocks are written merged
// in list order (by index), then its memory points. `plan_hash` (optional)
// is copied into otherData. Errors: none.
std::string ChromeTraceJson(const Timeline& t, const std::string& plan_hash = "");

}  // namespace pw::viz
