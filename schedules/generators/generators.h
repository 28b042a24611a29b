// Generator entry points, one file each. Internal to schedules/: callers use
// GenerateSchedule (registry.h), which has already checked P >= 1, m >= 1, v
// in the family's range, and filled `costs` (size P*v) when empty.
#pragma once

#include <array>
#include <functional>
#include <string>

#include "schedules/registry.h"

namespace pw {

StatusOr<Program> GenerateGPipe(const ScheduleRequest& req);           // gpipe.cc
StatusOr<Program> Generate1F1B(const ScheduleRequest& req);            // one_f_one_b.cc
StatusOr<Program> GenerateInterleaved1F1B(const ScheduleRequest& req); // interleaved_1f1b.cc
StatusOr<Program> GenerateLoopedBFS(const ScheduleRequest& req);       // looped_bfs.cc
StatusOr<Program> GenerateZBH1(const ScheduleRequest& req);            // zb_h1.cc
StatusOr<Program> GenerateZBH2(const ScheduleRequest& req);            // zb_h2.cc
StatusOr<Program> GenerateZBV(const ScheduleRequest& req);             // zb_v.cc
StatusOr<Program> GenerateZBAuto(const ScheduleRequest& req);          // zb_auto.cc
StatusOr<Program> GenerateVHalf(const ScheduleRequest& req);           // v_half.cc
StatusOr<Program> GenerateVMin(const ScheduleRequest& req);            // v_min.cc

// The zero-bubble greedy of ZB paper §3.1 (zb_auto.cc), shared by zb-auto
// (loop placement, v = 1) and zb-v (V placement, v = 2): searches its flag
// grid (for v = 1 in loop placement also the paper-style round construction,
// which gives ZB-2p's parallelogram tail) for `req` with `virtual_stages`
// stages per rank in `placement` under the per-rank activation memory
// `memory_limit` (costs.memory units) and returns the best compute-only
// program (smallest steady_step_s by Simulate(), then makespan). `name`
// prefixes error messages. Infeasible, naming --memory-limit, if no flag set
// fits the limit.
StatusOr<Program> ZeroBubbleGreedy(const ScheduleRequest& req, int virtual_stages, Placement placement,
                                   double memory_limit, const std::string& name);

// Switches of ZeroBubbleRounds (zb_rounds.cc; the paper's heuristic flags).
struct ZeroBubbleRoundFlags {
  bool f_overrun = false;  // warm-up: an F may still run when I0 arrives
  bool i_first = false;    // steady state: a ready I goes before the round's F
  bool skip_f = false;     // the paper's prioritize_b
  bool greedy_w = true;    // the paper's no_bubble_greedy (rule c)
};

// The ZB paper's per-microbatch round construction (ZB §3.1, ALGORITHMS.md §2
// "Heuristic"; zb_rounds.cc) for one stage per rank in loop placement: warm-up
// counted from I0's arrival, then per round one F and one I per stage, W's
// only when memory needs them or they fill a gap, the rest at the tail.
// Returns a compute-only program; Infeasible if it cannot stay within
// `memory_limit` (activation bytes per rank, costs.memory units).
StatusOr<Program> ZeroBubbleRounds(const ScheduleRequest& req, double memory_limit, ZeroBubbleRoundFlags flags);

// Controllable-memory building block (arXiv 2405.15362 §3; v_half.cc): for
// (P, rank i) the unit-slot offsets of microbatch 0's [F chunk 0, F chunk 1,
// I chunk 1, I chunk 0] on rank i (V placement).
using BlockOffsetsFn = std::function<std::array<int, 4>(int pp_size, int rank)>;

// Repeats the block every 6 slots for req.num_microbatches microbatches, puts
// W's (FIFO) into the free slots and after the last block, and returns the
// time-sorted compute-only order (V placement, v = 2). Errors: InvalidArgument
// for v != 2 (--virtual-stages); Internal if two offsets share a slot modulo 6;
// Infeasible naming --memory-limit if req.memory_limit is set and a rank's
// walk exceeds it. `name` prefixes messages.
StatusOr<Program> BuildingBlockV(const ScheduleRequest& req, const BlockOffsetsFn& offsets, const std::string& name);

// Checks a fixed-order schedule against request.memory_limit (if set) with
// the one memory walk there is, Simulate()'s (PLAN_FORMAT rule 7): the peak
// above static bytes on every rank must fit. Infeasible otherwise, naming
// `display_name`, --memory-limit, the bytes needed and `advice` (e.g. "use
// zb-auto"). The program must be valid (it is simulated with req.costs).
Status CheckActivationLimit(const Program& program, const ScheduleRequest& req, const std::string& display_name,
                            const std::string& advice);

// An empty program of the right shape for `req` and `placement`.
Program MakeEmptyProgram(const ScheduleRequest& req, int virtual_stages, Placement placement);

}  // namespace pw
