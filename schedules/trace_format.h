// The pipewright trace format, version 1: one training step of one plan as a
// Chrome Trace Event / Perfetto JSON file (docs/VIEWS.md). The SAME shape
// is written for a simulated plan (`pipewright show PLAN --format trace`) and
// by the executor for a measured step (`pipewright run --trace FILE`), so
// `pipewright show` draws either and diffs one against the other.
//
// Header only: names and rules, no code, so any target (the executor
// included) can emit it without linking the views. The one writer is
// schedules/trace_writer.h (used by viz/chrome_trace.h for simulated
// timelines and executor/runtime/measured_trace.h for measured steps); the reader is
// viz/trace_reader.h.
//
// File: a JSON object
//   {"displayTimeUnit": "ms",
//    "otherData": {"format": "pipewright-trace", "version": 1,
//                  "kind": "simulated" | "measured",
//                  "schedule": "1f1b", "pp_size": 4, "num_stages": 4,
//                  "num_microbatches": 8, "stage_to_rank": [0, 1, 2, 3],
//                  "memory_limit_bytes": 85899345920 | null,
//                  "plan_hash": "0123456789abcdef" (optional: PlanHash of the plan run),
//                  "title": "..." (optional),
//                  "memory_unit": {"bytes": 1, "name": "stage activations"} (optional:
//                      how views label memory; default bytes)},
//    "traceEvents": [ ...events, in any order... ]}
//
// Events (ts and dur in MICROSECONDS from the start of the step, may be
// fractional; pid = rank):
//  - process name, one per rank:
//      {"name": "process_name", "ph": "M", "pid": r, "args": {"name": "rank r (stages 0,7)"}}
//  - thread names: tid 0 = compute, tid 1 = comm:
//      {"name": "thread_name", "ph": "M", "pid": r, "tid": 0, "args": {"name": "compute"}}
//      {"name": "thread_name", "ph": "M", "pid": r, "tid": 1, "args": {"name": "comm"}}
//  - one complete event per action of the rank's list, named with the action
//    string (docs/PLAN_FORMAT.md), compute on tid 0, SEND/RECV on tid 1:
//      {"name": "1F3", "cat": "F", "ph": "X", "pid": 1, "tid": 0, "ts": 4000, "dur": 1000,
//       "args": {"action": "1F3", "stage": 1, "microbatch": 3, "index": 7}}
//    "cat" is the type (F, B, I, W, or "comm"). args.action is required and
//    must equal "name"; args.index (position in the rank's list) is
//    recommended: without it actions are ordered by ts (file order on ties).
//    Compute: ts = start of the computation, dur = its duration.
//    SEND: ts = when it was posted, dur = until the message was delivered
//    (simulated: latency + bytes / bandwidth; measured: until the send's wait
//    completed). RECV: ts = when it was posted, dur = until the data was
//    there (simulated: max(0, arrival - post); measured: until its wait
//    returned). Both carry "bind_id": k (an integer unique per message in
//    the file; pipewright writes 1 + (d·S + sending stage)·m + microbatch,
//    d = 0 forward, 1 backward), SEND with "flow_out": true and RECV with
//    "flow_in": true, so viewers draw an arrow from each send to its receive
//    (flow events v2), and args.peer_rank (the other end's rank).
//  - pipewright also writes a "process_sort_index" metadata event per rank
//    (sort_index = rank), so viewers list ranks in order.
//  - memory counter, per rank, a step function of bytes in use:
//      {"name": "memory", "ph": "C", "pid": r, "ts": 5000, "args": {"bytes": 140000000}}
//    optional for measured traces (no curve is drawn without it).
// Other events (instants, other threads, other counters) are allowed and
// ignored by the reader.
#pragma once

namespace pw {

inline constexpr const char* kTraceFormat = "pipewright-trace";
inline constexpr int kTraceVersion = 1;
inline constexpr int kTraceComputeTid = 0;                    // thread "compute"
inline constexpr int kTraceCommTid = 1;                       // thread "comm"
inline constexpr const char* kTraceMemoryCounter = "memory";  // counter name; series "bytes"
inline constexpr double kTraceMicrosPerSecond = 1e6;          // ts/dur are µs

}  // namespace pw
