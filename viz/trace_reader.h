// Reads a pipewright trace (schedules/trace_format.h), simulated or measured,
// into a Timeline, so `show` draws and diffs measured steps with the same
// views as plans.
#pragma once

#include <string>

#include "base/status.h"
#include "viz/timeline.h"

namespace pw::viz {

struct TraceInfo {
  std::string plan_hash;  // otherData.plan_hash, or empty
};

// Parses trace JSON text. `source` names the file in errors. Returns the
// timeline with metrics computed from the trace's own times
// (ComputeTimelineMetrics) and the schedule shape checked
// (CheckProgramShape). When otherData is missing, P, S, m and the placement
// are inferred from the events. Errors (InvalidArgument) name the place:
// "t.json: not valid JSON (truncated ...)", "t.json: traceEvents[12]: 'X'
// event without args.action", "t.json: traceEvents[12].args.action: bad
// action '1Q3' ...", "t.json: rank 1, action 4 '5F0': stage 5 lives on rank 2".
StatusOr<Timeline> ParseTrace(const std::string& text, const std::string& source = "trace", TraceInfo* info = nullptr);

// Reads and parses a trace file. NotFound if it cannot be opened.
StatusOr<Timeline> ReadTraceFile(const std::string& path, TraceInfo* info = nullptr);

// True if `text` looks like a Chrome trace (a JSON object with
// "traceEvents", or a JSON array) rather than a plan or CSV. Cheap: looks at
// the leading characters and for the key.
bool LooksLikeTrace(const std::string& text);

}  // namespace pw::viz
