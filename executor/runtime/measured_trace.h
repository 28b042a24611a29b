// `pipewright run --trace FILE`: one measured training step of every rank as
// a pipewright trace (schedules/trace_format.h, version 1, kind "measured"),
// the same shape `pipewright show PLAN --format trace` writes for the
// simulated step, so `pipewright show FILE --plan PLAN` diffs the two. A thin
// adapter over the one trace writer (schedules/trace_writer.h): spans in
// seconds, the file in µs rounded to the ns. Torch-free.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "executor/comm/communicator.h"
#include "executor/runtime/interpreter.h"
#include "plan/plan.h"
#include "schedules/trace_writer.h"

namespace pw::exec {

// The trace header (otherData) of a measured step of `plan`: kind
// "measured", schedule, sizes, placement, memory limit, PlanHash(plan) and
// `title`.
TraceHeader MeasuredTraceHeader(const Plan& plan, const std::string& title);

// This rank's events, exactly as WriteMeasuredTrace writes them (TraceRankEvents
// of schedules/trace_writer.h): process/thread names and one complete event
// per action of `program.ranks[rank]` in list order (compute on tid 0,
// SEND/RECV on tid 1 with flow bind ids pairing each send with its receive).
// `spans` is RankStepTiming::spans of the step (seconds from the step's
// start; written as µs). Extra spans are ignored, missing ones leave their
// actions out (WriteMeasuredTrace refuses both). REQUIRES: 0 <= rank < P.
nlohmann::json RankTraceEvents(const Program& program, int rank, const std::vector<ActionSpan>& spans);

// Collective: gathers every rank's spans to rank 0, which writes `path`
// atomically (temp file + rename) through TraceJson with
// MeasuredTraceHeader(plan, title). Errors: InvalidArgument if some rank's
// spans do not cover its list (every rank returns it); the communicator's
// errors; rank 0's write error naming the file.
Status WriteMeasuredTrace(const Plan& plan, const std::vector<ActionSpan>& spans, Communicator& comm,
                          const std::string& path, const std::string& title);

// Flow id of the message an action sends or receives (TraceFlowId: 1-based,
// unique per message of a step); 0 for compute actions. A SEND and its
// matching RECV get the same id.
int64_t MessageFlowId(const Program& program, const Action& action);

}  // namespace pw::exec
