// GPipe (Huang et al. 2019, Fig. 2): every rank runs all m forwards, then all
// m backwards in microbatch order. One stage per rank. Peak activations: m on
// every rank. With unit costs (F = 1, B = 2) the makespan is 3(m + P - 1):
// the last rank's forwards end at P - 1 + m, its backwards take 2m, and the
// gradient of the last microbatch then crosses P - 1 ranks at 2 each.
#include "schedules/generators/generators.h"

namespace pw {

StatusOr<Program> GenerateGPipe(const ScheduleRequest& req) {
  Program p = MakeEmptyProgram(req, 1, Placement::kLoop);
  for (int r = 0; r < req.pp_size; ++r) {
    auto& list = p.ranks[r];
    for (int mb = 0; mb < req.num_microbatches; ++mb) list.push_back(MakeAction(r, ActionType::kF, mb));
    for (int mb = 0; mb < req.num_microbatches; ++mb) list.push_back(MakeAction(r, ActionType::kB, mb));
  }
  return p;
}

}  // namespace pw
