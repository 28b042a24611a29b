// `pipewright run --trace FILE`: one measured training step of every rank as
// a pipewright trace (schedules/trace_format.h, version 1, kind "measured"),
// the same shape `pipewright show PLAN --format trace` writes for the
// simulated step, so `pipewright show FILE --plan PLAN` diffs the two.
// Torch-free.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor/communicator.h"
#include "executor/interpreter.h"
#include "schedules/plan.h"
#include "schedules/status.h"

namespace pw::exec {

// This rank's events: thread/process names and one complete event per
// action of `program.ranks[rank]` (compute on tid 0, SEND/RECV on tid 1 with
// flow bind ids pairing each send with its receive). `spans` is
// RankStepTiming::spans of the step (seconds; written as µs).
// REQUIRES: spans.size() == program.ranks[rank].size().
nlohmann::json RankTraceEvents(const Program& program, int rank, const std::vector<ActionSpan>& spans);

// Collective: gathers every rank's events to rank 0, which writes `path`
// atomically (temp file + rename) with otherData naming the plan (hash,
// schedule, sizes) and `title`. Errors: InvalidArgument if the spans do not
// cover the rank's list; the communicator's errors; rank 0's write error
// naming the file.
Status WriteMeasuredTrace(const Plan& plan, const std::vector<ActionSpan>& spans, Communicator& comm,
                          const std::string& path, const std::string& title);

// Flow id of the message an action sends or receives (1-based, unique per
// message of a step); 0 for compute actions. A SEND and its matching RECV
// get the same id.
int64_t MessageFlowId(const Program& program, const Action& action);

}  // namespace pw::exec
