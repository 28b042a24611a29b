// The one writer of the pipewright trace format (schedules/trace_format.h):
// per-rank action spans (seconds) + header fields -> the trace JSON (µs).
// Torch-free, in the bottom layer, so that both callers use it:
//  - viz/chrome_trace.h   simulated (or loaded) timelines,
//                                `pipewright show PLAN --format trace`;
//  - executor/runtime/measured_trace.h   the measured step of `pipewright run --trace`.
// Every name, category, tid, flow id, unit and rounding rule lives here, so a
// simulated and a measured trace of the same spans differ only in
// otherData.kind, otherData.title and what the caller chose to pass (e.g.
// memory samples).
//
// Rules (one choice for both kinds):
//  - ts = start rounded to the nanosecond (3 decimals of µs); dur = the
//    rounded end minus the rounded start, rounded again, never negative.
//  - compute (F/B/I/W): tid 0, cat = the type letter; SEND/RECV: tid 1,
//    cat "comm", args.peer_rank (rank of the other stage, from
//    stage_to_rank), "bind_id" = TraceFlowId and "flow_out" (SEND) or
//    "flow_in" (RECV).
//  - args = {action, stage, microbatch, index[, peer_rank]}.
//  - metadata per rank: process_name "rank r (stages a,b)",
//    process_sort_index r, thread_name "compute" (tid 0) and "comm" (tid 1).
//  - memory counter: {"name": "memory", "ph": "C", "args": {"bytes": n}}.
//  - keys in a fixed order (ordered JSON), one event per line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "schedules/action.h"
#include "schedules/simulate.h"

namespace pw {

// otherData of a trace (trace_format.h).
struct TraceHeader {
  std::string kind = "simulated";  // "simulated" or "measured"
  std::string schedule;            // canonical schedule name, or "custom"
  int pp_size = 0;
  int num_stages = 0;
  int num_microbatches = 0;
  std::vector<int> stage_to_rank;             // size num_stages
  std::optional<int64_t> memory_limit_bytes;  // written as null when absent
  std::string plan_hash;                      // omitted when empty
  std::string title;
  // How views label memory; written only when not the default (1, "B").
  int64_t memory_unit_bytes = 1;
  std::string memory_unit_name = "B";
};

// One action of a rank's list and when it ran.
struct TraceSpan {
  Action action;
  int index = 0;         // position in the rank's action list (args.index)
  double start_s = 0.0;  // seconds from the start of the step
  double end_s = 0.0;    // seconds; an end before the start is written as dur 0
};

// Everything one rank contributes.
struct TraceRank {
  int rank = 0;                     // pid
  std::vector<int> stages;          // stages held, ascending (process name only)
  std::vector<TraceSpan> spans;     // written in this order (callers pass list order)
  std::vector<MemoryPoint> memory;  // optional "memory" counter samples (seconds, bytes)
};

// Flow id ("bind_id") of the message a SEND or RECV belongs to: 1-based,
// unique per message of one step, the same for a SEND and its matching RECV:
// 1 + (direction * num_stages + sending stage) * num_microbatches + microbatch,
// direction 0 for activations (SEND_F/RECV_F), 1 for gradients. Returns 0 (no
// flow) for compute actions and for a sending stage or microbatch outside
// [0, num_stages) x [0, num_microbatches).
int64_t TraceFlowId(const Action& action, int num_stages, int num_microbatches);

// Seconds -> trace µs, rounded to the nanosecond (the rule for ts and for the
// ends that dur is computed from).
double TraceMicros(double seconds);

// The events of one rank, in file order: process_name, process_sort_index,
// the two thread names, one complete event per span (in the given order), then
// one counter event per memory sample. Uses header.num_stages,
// num_microbatches and stage_to_rank for flow ids and peer ranks (a peer
// stage outside stage_to_rank gets no args.peer_rank). Errors: none; input
// is written as given (the reader, viz/trace_reader.h, rejects
// out-of-range ranks or actions that do not form the plan's lists).
nlohmann::ordered_json TraceRankEvents(const TraceHeader& header, const TraceRank& rank);

// The whole trace file text: {"displayTimeUnit": "ms", "otherData": {...},
// "traceEvents": [...]} with the ranks' events in the order given
// (TraceRankEvents each), one event per line, trailing newline.
// Deterministic. Errors: none (see TraceRankEvents).
std::string TraceJson(const TraceHeader& header, const std::vector<TraceRank>& ranks);

}  // namespace pw
