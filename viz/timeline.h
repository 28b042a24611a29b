// Timeline: what every view draws. One step of a pipeline schedule with a
// start and end time for each action, the messages between ranks, and each
// rank's memory over time. A timeline comes either from the one simulator
// (TimelineFromSimulation: a plan or CSV) or from a measured trace
// (trace_reader.h); the views never simulate or re-derive timings themselves.
//
// Units: seconds from the start of the step; memory in bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/costs.h"
#include "base/format.h"  // StrFormat, used by every view
#include "schedules/action.h"
#include "schedules/program.h"
#include "schedules/simulate.h"
#include "viz/static_memory.h"

namespace pw::viz {

// One action on a rank's compute or comm lane.
struct TimelineBlock {
  Action action;
  int index = 0;       // position in the rank's action list
  double start = 0.0;  // seconds
  double end = 0.0;    // seconds; == start for a SEND/RECV that takes no time
};

// One SEND -> RECV pair. `sent_s` is when the sender posted it; `available_s`
// is when the receiver has the data (simulated: max(arrival, RECV post);
// measured: the end of the RECV event).
struct TimelineMessage {
  Action send;
  Action recv;
  int src_rank = 0;
  int dst_rank = 0;
  double sent_s = 0.0;
  double available_s = 0.0;
};

struct TimelineRank {
  std::vector<int> stages;             // stages held by the rank, ascending
  std::vector<TimelineBlock> compute;  // F/B/I/W in list order
  std::vector<TimelineBlock> comm;     // SEND/RECV and REDUCE_GRAD in list order
  std::vector<MemoryPoint> memory;     // bytes in use after each time (step function); may be empty
  int64_t peak_memory_bytes = 0;       // max of `memory` (0 if unknown)
  double busy_s = 0.0;                 // sum of compute durations, optimizer step included
  // The rank's optimizer step after its last action and reductions
  // (PLAN_FORMAT rule 11; simulated plans with cost_s.OPTIMIZER only):
  // seconds, and its start.
  double optimizer_s = 0.0;
  double optimizer_start_s = 0.0;
  double first_compute_start_s = 0.0;
  double last_compute_end_s = 0.0;
  // Idle rank-time inside [0, makespan]: makespan - busy_s.
  double idle_s = 0.0;
};

struct Timeline {
  std::string title;               // e.g. "1F1B (plan p.json)"
  std::string schedule;            // canonical schedule name, or "custom"
  std::string kind = "simulated";  // "simulated" or "measured"
  int pp_size = 0;
  int num_stages = 0;
  int num_microbatches = 0;
  // Data-parallel replicas (REDUCE_GRAD spans sit on the comm lanes); a
  // trace read back does not record it: 2 when it holds reductions.
  int dp_size = 1;
  // Tensor-parallel ranks per pipeline rank (a plan's tp_size): one lane
  // still stands for one pipeline rank, whose T ranks run its list in
  // lockstep; the headers state T when it is > 1.
  int tp_size = 1;
  std::vector<int> stage_to_rank;
  std::vector<TimelineRank> ranks;  // size pp_size
  std::vector<TimelineMessage> messages;
  std::optional<int64_t> memory_limit_bytes;
  // Bytes per display unit of memory, and its name: one stage's activations
  // for unit-cost plans ("stage activations"), else 1 ("B", shown as KiB/MiB/GiB).
  int64_t memory_unit_bytes = 1;
  std::string memory_unit_name = "B";
  // docs/PLAN_FORMAT.md rules 8-9, over this timeline.
  double makespan_s = 0.0;
  double steady_step_s = 0.0;
  double bubble_ratio = 0.0;
  // Static memory per rank by layer (plans only; empty ranks otherwise).
  StaticBreakdown static_memory;
};

// Builds the timeline of a simulated program. `program` may be lowered or
// compute-only (then `messages` is empty); `sim` must be Simulate(program,
// costs). Message availability uses costs.comm (rule 2).
Timeline TimelineFromSimulation(const Program& program, const StageCosts& costs, const SimResult& sim,
                                const std::string& title, const std::string& schedule,
                                std::optional<int64_t> memory_limit_bytes);

// Fills busy/idle/first/last per rank, makespan, steady step and bubble ratio
// (rules 8-9) and peak memory from the blocks and memory points already in
// `t`. Used for measured timelines; gives the simulator's numbers back for a
// simulated one.
void ComputeTimelineMetrics(Timeline* t);

// The schedule part of `t` as a Program (compute and comm actions merged in
// list order by index).
Program TimelineProgram(const Timeline& t);

// One step of a critical path: the action and the rank it ran on.
struct CriticalStep {
  int rank = 0;
  Action action;
  double start = 0.0;
  double end = 0.0;
  // What made it start when it did: "start of step", "previous action on the
  // rank" or "input from rank R".
  std::string waited_for;
};

// The chain of compute actions that ends at the makespan: from the compute
// block that ends last, repeatedly step to whichever of (the rank's previous
// compute, the producer of its input on another rank) ended latest, until a
// block with neither. Returned in time order. Works for simulated and
// measured timelines (it only reads start/end times).
std::vector<CriticalStep> CriticalPath(const Timeline& t);

// "1.25 s", "340 ms", "12.5 µs": a duration with 4 significant digits.
std::string FormatSeconds(double s);
// Memory in `t`'s display unit: "4 stage activations", "1.50 GiB".
std::string FormatMemory(const Timeline& t, int64_t bytes);
// Escapes &, <, >, " and ' for XML/HTML text and attributes.
std::string XmlEscape(const std::string& s);
// A "nice" axis tick step (1, 2 or 5 times a power of ten) of at least
// `min_step`; 1 if min_step <= 0.
double NiceStep(double min_step);
// A rank's stages as "0,4,8" (empty for none).
std::string StagesText(const std::vector<int>& stages);

}  // namespace pw::viz
