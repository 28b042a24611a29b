// Generator entry points, one file each. Internal to schedules/: callers use
// GenerateSchedule (registry.h), which has already checked P >= 1, m >= 1, v
// in the family's range, and filled `costs` (size P*v) when empty.
#pragma once

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

// The zero-bubble greedy of ZB paper §3.1 (zb_auto.cc), shared by zb-auto
// (loop placement, v = 1) and zb-v (V placement, v = 2): searches its flag
// grid for `req` with `virtual_stages` stages per rank in `placement` under
// the per-rank activation memory `memory_limit` (costs.memory units) and
// returns the best compute-only program (smallest steady_step_s by
// Simulate(), then makespan). `name` prefixes error messages. Infeasible,
// naming --memory-limit, if no flag set fits the limit.
StatusOr<Program> ZeroBubbleGreedy(const ScheduleRequest& req, int virtual_stages, Placement placement,
                                   double memory_limit, const std::string& name);

// An empty program of the right shape for `req` and `placement`.
Program MakeEmptyProgram(const ScheduleRequest& req, int virtual_stages, Placement placement);

}  // namespace pw
