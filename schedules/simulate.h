// The discrete-event simulator: the only one in pipewright. The planner, the
// lowering pass, the validator, the visualiser, the report and the executor's
// pre-flight check all call it.
//
// It implements exactly the semantics of docs/PLAN_FORMAT.md (rules 1-9):
// a rank runs its list in order; compute occupies it for the stage's cost;
// SEND/RECV are posted in zero time; a compute that consumes a message starts
// at max(rank free, message arrival = send post + latency + bytes/bandwidth).
// REDUCE_GRAD (rule 10) is posted when the rank reaches it and runs for its
// stage's cost.reduce_grad on the rank's own data-parallel lane (one
// reduction at a time, in list order) while the rank computes on; the step
// (makespan) ends when the last reduction is done, so only its exposed part
// lengthens the step. Its reduce_buffer bytes are held until the step ends.
// Then each rank runs its optimizer step (rule 11) for the sum of its
// stages' cost.optimizer seconds: busy time that ends the rank's step.
// A compute-only program (no SEND/RECV) is simulated as if every cross-rank
// dependency were sent right after its producer and received in time.
// Cost: linear in the number of actions (each action is visited once; a
// blocked rank is woken once per message it waits for).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/costs.h"
#include "base/status.h"
#include "schedules/program.h"

namespace pw {

// Start and end of one action, seconds from the start of the step. SEND/RECV
// take no rank time: start == end == the time they were posted.
struct ActionTiming {
  double start = 0.0;
  double end = 0.0;
};

// One point of a rank's memory walk: bytes in use after `time` seconds.
struct MemoryPoint {
  double time = 0.0;
  int64_t bytes = 0;
};

struct RankResult {
  double busy_s = 0.0;                 // sum of compute durations, optimizer step included (rules 8, 11)
  double optimizer_s = 0.0;            // the optimizer step after the rank's last action (rule 11)
  double first_compute_start_s = 0.0;  // start of the first F/B/I/W
  double last_compute_end_s = 0.0;     // end of the last F/B/I/W
  int64_t start_memory_bytes = 0;      // static bytes of the rank's stages
  int64_t end_memory_bytes = 0;        // where the walk ends (== start for a sound plan)
  int64_t peak_memory_bytes = 0;       // max of the walk (rule 7)
  std::vector<MemoryPoint>
      memory;  // walk: a point per compute action (at its end; two for OVERLAP_F_B, after each half) and per
               // REDUCE_GRAD holding a buffer (at its start) and one at the makespan freeing them
};

struct SimResult {
  std::vector<std::vector<ActionTiming>> timing;  // [rank][index], same shape as Program::ranks
  std::vector<RankResult> per_rank;               // size P
  double makespan_s = 0.0;  // latest end of any action or optimizer step (rules 8, 11)
  // Max over ranks of: end of the last compute (or REDUCE_GRAD) + optimizer
  // step - start of the first compute (rules 9, 11).
  double steady_step_s = 0.0;
  double bubble_ratio = 0.0;     // 1 - sum(busy) / (P * makespan) (rule 8)
  double bubble_overhead = 0.0;  // Megatron's idle/busy: (P*makespan - sum busy) / sum busy
};

// Simulates `program` with `costs` (one StageCost and StageMemory per stage).
// Errors (InvalidArgument), each naming rank, index and action and carrying
// the schedule grid with the place marked:
//  - shape errors (see CheckProgramShape) or costs of the wrong size;
//  - a compute whose same-rank input has not run earlier in the list;
//  - in a lowered program: a compute before the RECV of its input, a SEND
//    before its producer, a SEND/RECV between stages on one rank, a message
//    received twice, a FIFO mismatch (k-th send and k-th receive of a channel
//    name different microbatches);
//  - deadlock: no rank can make progress (every stuck rank is marked).
StatusOr<SimResult> Simulate(const Program& program, const StageCosts& costs);

// Change of a rank's bytes when compute action `type` of a stage with
// `memory` ends (docs/PLAN_FORMAT.md rule 7): +activation at F, -activation
// at B, wstash - activation at I, -wstash at W; 0 for messages. The one
// statement of the memory walk: the simulator and the planner's
// MemoryProfile (planner/memory_profile.h) both step by it.
int64_t MemoryDelta(ActionType type, const StageMemory& memory);

// Rule 8: 1 - sum_busy_s / (ranks * makespan_s), the idle fraction of all
// rank-time; 0 for an empty step. Used for predicted and measured bubbles.
double BubbleRatio(double sum_busy_s, int ranks, double makespan_s);

}  // namespace pw
