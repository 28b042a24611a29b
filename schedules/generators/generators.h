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

// An empty program of the right shape for `req` and `placement`.
Program MakeEmptyProgram(const ScheduleRequest& req, int virtual_stages, Placement placement);

}  // namespace pw
