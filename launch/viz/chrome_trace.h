// Chrome Trace / Perfetto JSON of a timeline, in the pipewright trace format
// (schedules/trace_format.h): one process per rank, threads "compute" and
// "comm", complete events with real durations in µs, a flow arrow from each
// SEND to its RECV, and a "memory" counter track per rank.
#pragma once

#include <string>

#include "launch/viz/timeline.h"

namespace pw::viz {

// Returns the trace JSON text (deterministic, 1 event per line, trailing
// newline). `plan_hash` (optional) is copied into otherData.
std::string ChromeTraceJson(const Timeline& t, const std::string& plan_hash = "");

}  // namespace pw::viz
