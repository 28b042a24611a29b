// Generator entry points, one file each. Internal to schedules/: callers use
// GenerateSchedule (registry.h), which has already checked P >= 1, m >= 1, v
// in the family's range, and filled `costs` (size P*v) when empty.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "schedules/registry.h"
#include "schedules/simulate.h"

namespace pw {

StatusOr<Program> GenerateGPipe(const ScheduleRequest& req);            // gpipe.cc
StatusOr<Program> Generate1F1B(const ScheduleRequest& req);             // one_f_one_b.cc
StatusOr<Program> GenerateInterleaved1F1B(const ScheduleRequest& req);  // interleaved_1f1b.cc
StatusOr<Program> GenerateLoopedBFS(const ScheduleRequest& req);        // looped_bfs.cc
StatusOr<Program> GenerateZBH1(const ScheduleRequest& req);             // zb_h1.cc
StatusOr<Program> GenerateZBH2(const ScheduleRequest& req);             // zb_h2.cc
StatusOr<Program> GenerateZBV(const ScheduleRequest& req);              // zb_v.cc
StatusOr<Program> GenerateZBAuto(const ScheduleRequest& req);           // zb_auto.cc
StatusOr<Program> GenerateVHalf(const ScheduleRequest& req);            // v_half.cc
StatusOr<Program> GenerateVMin(const ScheduleRequest& req);             // v_min.cc
StatusOr<Program> GenerateVAuto(const ScheduleRequest& req);            // v_auto.cc
StatusOr<Program> GenerateInterleavedZB(const ScheduleRequest& req);    // interleaved_zb.cc
StatusOr<Program> GenerateDualPipeV(const ScheduleRequest& req);        // dualpipev.cc

// The zero-bubble greedy of ZB paper §3.1 (zb_auto.cc), shared by zb-auto
// (loop placement, v = 1) and zb-v (V placement, v = 2): searches its flag
// grid (for v = 1 in loop placement also the paper-style round construction,
// which gives ZB-2p's parallelogram tail) for `req` with `virtual_stages`
// stages per rank in `placement` under the activation memory limits
// `memory_limits` (one per rank, costs.memory units) and returns the best
// compute-only program (smallest steady_step_s by Simulate(), then
// makespan). `name` prefixes error messages. Infeasible, naming
// --memory-limit and the rank, if one microbatch in flight
// (OneMicrobatchProgram) does not fit a rank or no flag set fits the limits.
StatusOr<Program> ZeroBubbleGreedy(const ScheduleRequest& req, int virtual_stages, Placement placement,
                                   const std::vector<double>& memory_limits, const std::string& name);

// For tests (tests/schedules/zb_test.cc): with `on` false, ZeroBubbleGreedy
// runs every list-scheduler flag set to its end and simulates it, instead of
// stopping a run whose steady step is sure to exceed the best so far (the
// default, docs/ALGORITHMS.md §3, ZB-auto); the chosen program is the same either
// way. Returns the previous setting. ZeroBubbleCutoffs() counts the runs the
// cutoff has stopped since the process started.
bool SetZeroBubbleCutoff(bool on);
long long ZeroBubbleCutoffs();

// The activation limit of each rank for a memory-adaptive generator: the
// request's (RankMemoryLimit) if it sets one, else `fallback` (the family's
// default) on every rank. Size P.
std::vector<double> RankLimits(const ScheduleRequest& req, double fallback);

// True if every rank's activation peak in `sim` (peak - static bytes) is
// within its entry of `limits` (size P, costs.memory units).
bool FitsMemoryLimits(const SimResult& sim, const std::vector<double>& limits);

// Switches of ZeroBubbleRounds (zb_rounds.cc; the paper's heuristic flags).
struct ZeroBubbleRoundFlags {
  bool f_overrun = false;  // warm-up: an F may still run when I0 arrives
  bool i_first = false;    // steady state: a ready I goes before the round's F
  bool skip_f = false;     // the paper's prioritize_b
  bool greedy_w = true;    // the paper's no_bubble_greedy (rule c)
};

// The ZB paper's per-microbatch round construction (ZB §3.1, docs/ALGORITHMS.md §2
// "Heuristic"; zb_rounds.cc) for one stage per rank in loop placement: warm-up
// counted from I0's arrival, then per round one F and one I per stage, W's
// only when memory needs them or they fill a gap, the rest at the tail.
// Returns a compute-only program; Infeasible if it cannot stay within
// `memory_limits` (activation bytes, one limit per rank, costs.memory units).
StatusOr<Program> ZeroBubbleRounds(const ScheduleRequest& req, const std::vector<double>& memory_limits,
                                   ZeroBubbleRoundFlags flags);

// Controllable-memory building block (arXiv 2405.15362 §3; v_half.cc): for
// (P, rank i) the unit-slot offsets of microbatch 0's [F chunk 0, F chunk 1,
// I chunk 1, I chunk 0] on rank i (V placement).
using BlockOffsetsFn = std::function<std::array<int, 4>(int pp_size, int rank)>;

// Repeats the block every 6 slots for req.num_microbatches microbatches, puts
// W's (FIFO) into the free slots and after the last block, and returns the
// time-sorted compute-only order (V placement, v = 2). Errors: InvalidArgument
// for v != 2 (--virtual-stages); Internal if two offsets share a slot modulo 6.
// `name` prefixes messages. (The memory limit is GenerateSchedule's check.)
StatusOr<Program> BuildingBlockV(const ScheduleRequest& req, const BlockOffsetsFn& offsets, const std::string& name);

// V-Half / V-Min (v_half.cc): the block repeated, then squeezed and
// reordered without raising the peak (v_slots.h FixedBlockSlots); the plain
// repetition is kept instead only if it is faster on req.costs and needs no
// more memory on any rank. Errors as BuildingBlockV; Internal if the
// reordered order does not simulate (a bug).
StatusOr<Program> FixedBlockV(const ScheduleRequest& req, const BlockOffsetsFn& offsets, const std::string& name);

// V-auto's building-block search (v_auto.cc) under `limits` (activation
// bytes per rank, size P): the best program by (steady_step_s, makespan) on
// req.costs among the blocks whose simulated peak fits. Infeasible if none
// fits; Internal if a block order does not simulate (a bug).
StatusOr<Program> VBlockSearch(const ScheduleRequest& req, const std::vector<double>& limits);

// ZB-V's round construction as the authors build it (zb_v_rounds.cc): the
// four (fill_i, fill_f) runs that complete within `limits` (activation
// bytes per rank), each the best of its approved-bubble re-runs.
// `own_choice` receives the index the construction itself would pick (the
// smallest worst bubble by its own time estimate), -1 if none completed.
std::vector<Program> ZBVRoundCandidates(const ScheduleRequest& req, const std::vector<double>& limits, int* own_choice);

// The V-Half block offsets of rank i of P (v_half.cc), for V-auto's pool.
std::array<int, 4> VHalfOffsets(int P, int i);

// The one-microbatch order of OneMicrobatchOrder (registry.h) for a shape:
// each rank's F's upwards, then downwards I + W (or B), m = 1.
Program OneMicrobatchProgram(const ScheduleRequest& req, int virtual_stages, Placement placement, bool split_backward);

// How an error names rank `rank`'s limit: "--memory-limit N" for one limit
// on every rank, else "the N bytes that --memory-limit leaves rank r for
// activations" (ScheduleRequest::rank_memory_limits); "no memory limit"
// when the request has none.
std::string RankLimitText(const ScheduleRequest& req, int rank);

// An empty program of the right shape for `req` and `placement`.
Program MakeEmptyProgram(const ScheduleRequest& req, int virtual_stages, Placement placement);

}  // namespace pw
