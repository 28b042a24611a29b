// Program: the one schedule IR. Each rank's ordered action list for one
// training step, plus the shape of the problem (P ranks, S stages, m
// microbatches) and the stage -> rank placement.
//
// A generator fills a *compute-only* program (F/B/I/W only); lowering
// (lower.h) adds SEND/RECV; validate.h and simulate.h accept either form.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "schedules/action.h"

namespace pw {

struct Program {
  int pp_size = 0;                         // P: number of ranks
  int num_stages = 0;                      // S = P * v global stages
  int num_microbatches = 0;                // m
  std::vector<int> stage_to_rank;          // size S; stage s lives on rank stage_to_rank[s]
  std::vector<std::vector<Action>> ranks;  // size P; ranks[r] = rank r's actions in order
  // D: data-parallel replicas of this pipeline (world size pp_size * dp_size;
  // every replica runs these same lists). With D > 1 each stage's list holds
  // one REDUCE_GRAD after its last B/W (docs/PLAN_FORMAT.md rule 10).
  // (Last, so that aggregate initialisers of the fields above still work.)
  int dp_size = 1;

  // Total number of actions over all ranks.
  size_t NumActions() const;
  // True if any rank's list holds a SEND or RECV (REDUCE_GRAD is not one).
  bool HasComms() const;
  // Stages held by `rank`, ascending.
  std::vector<int> StagesOfRank(int rank) const;
};

// Stage -> rank placements (PyTorch `generate_stage_to_rank_mapping`).
enum class Placement {
  kLoop,  // stage s on rank s % P (GPipe, 1F1B, interleaved, looped BFS, ZB-H*)
  kV,     // zig-zag: rank r holds stages r and 2P-1-r (then 2P+r, 4P-1-r, ...) (ZB-V)
};

// "loop" or "v".
const char* PlacementName(Placement p);

// Returns the size P*v stage->rank vector for `placement`.
// REQUIRES: pp_size >= 1, virtual_stages >= 1.
std::vector<int> MakeStageToRank(Placement placement, int pp_size, int virtual_stages);

// Checks the shape fields: sizes agree, every stage maps to a rank in
// [0, P), every action's stage is in [0, S) and microbatch in [0, m) (-1 for
// REDUCE_GRAD), dp_size >= 1, and each
// action sits on the rank that holds its stage. Returns InvalidArgument naming
// rank r and index i of the first offender ("rank 1, action 4 '5F0': ...").
Status CheckProgramShape(const Program& program);

// Where a grid should draw its marker (rank, index into that rank's list).
struct GridMark {
  int rank = -1;
  int index = -1;
};

// Formats the schedule as a step x rank grid, one column per rank, like
// PyTorch's `_format_pipeline_order`: "Step 003: 0F3      1I0 ...". Each
// marked cell is wrapped as "[1F3]" and its row ends with "<-- ERROR HERE".
// Long programs show `context` rows around the marks (all rows if no marks).
std::string FormatGrid(const Program& program, const std::vector<GridMark>& marks = {}, int context = 6);

}  // namespace pw
