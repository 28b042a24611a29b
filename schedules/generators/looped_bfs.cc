// Looped BFS (Lamy-Poirier 2022, arXiv:2211.05953; PyTorch
// `ScheduleLoopedBFS`): loop placement with v stages per rank; each rank runs
// all m forwards of its first local stage, then of its second, ... (breadth
// first over microbatches), then all backwards with local stages in reverse
// order. Peak activations: m*v stage-activations (all forwards precede the
// backwards). It trades GPipe-like memory for an interleaving-sized bubble.
#include "schedules/generators/generators.h"

namespace pw {

StatusOr<Program> GenerateLoopedBFS(const ScheduleRequest& req) {
  const int P = req.pp_size, m = req.num_microbatches, v = req.virtual_stages;
  Program p = MakeEmptyProgram(req, v, Placement::kLoop);
  for (int r = 0; r < P; ++r) {
    auto& list = p.ranks[r];
    for (int k = 0; k < v; ++k)
      for (int mb = 0; mb < m; ++mb) list.push_back(MakeAction(k * P + r, ActionType::kF, mb));
    for (int k = v - 1; k >= 0; --k)
      for (int mb = 0; mb < m; ++mb) list.push_back(MakeAction(k * P + r, ActionType::kB, mb));
  }
  return p;
}

}  // namespace pw
