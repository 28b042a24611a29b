#include "schedules/program.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace pw {

size_t Program::NumActions() const {
  size_t n = 0;
  for (const auto& r : ranks) n += r.size();
  return n;
}

bool Program::HasComms() const {
  for (const auto& r : ranks)
    for (const auto& a : r)
      if (IsComm(a.type)) return true;
  return false;
}

std::vector<int> Program::StagesOfRank(int rank) const {
  std::vector<int> out;
  for (int s = 0; s < static_cast<int>(stage_to_rank.size()); ++s)
    if (stage_to_rank[s] == rank) out.push_back(s);
  return out;
}

const char* PlacementName(Placement p) { return p == Placement::kLoop ? "loop" : "v"; }

std::vector<int> MakeStageToRank(Placement placement, int pp_size, int virtual_stages) {
  std::vector<int> out(static_cast<size_t>(pp_size) * virtual_stages);
  for (int s = 0; s < static_cast<int>(out.size()); ++s) {
    if (placement == Placement::kLoop) {
      out[s] = s % pp_size;
    } else {
      // V: even "loops" go down the ranks, odd loops come back up.
      int loop = s / pp_size, pos = s % pp_size;
      out[s] = (loop % 2 == 0) ? pos : pp_size - 1 - pos;
    }
  }
  return out;
}

Status CheckProgramShape(const Program& p) {
  if (p.pp_size < 1) return Status::InvalidArgument("pp_size must be >= 1, got " + std::to_string(p.pp_size));
  if (p.num_stages < 1) return Status::InvalidArgument("num_stages must be >= 1, got " + std::to_string(p.num_stages));
  if (p.dp_size < 1) return Status::InvalidArgument("dp_size must be >= 1, got " + std::to_string(p.dp_size));
  if (p.num_microbatches < 1)
    return Status::InvalidArgument("num_microbatches must be >= 1, got " + std::to_string(p.num_microbatches));
  if (static_cast<int>(p.stage_to_rank.size()) != p.num_stages)
    return Status::InvalidArgument("stage_to_rank has " + std::to_string(p.stage_to_rank.size()) +
                                   " entries but num_stages is " + std::to_string(p.num_stages));
  if (static_cast<int>(p.ranks.size()) != p.pp_size)
    return Status::InvalidArgument("program has " + std::to_string(p.ranks.size()) + " rank lists but pp_size is " +
                                   std::to_string(p.pp_size));
  std::set<int> used;
  for (int s = 0; s < p.num_stages; ++s) {
    int r = p.stage_to_rank[s];
    if (r < 0 || r >= p.pp_size)
      return Status::InvalidArgument("stage_to_rank[" + std::to_string(s) + "] = " + std::to_string(r) +
                                     " is not a rank in [0, " + std::to_string(p.pp_size) + ")");
    used.insert(r);
  }
  if (static_cast<int>(used.size()) != p.pp_size) {
    for (int r = 0; r < p.pp_size; ++r)
      if (!used.count(r)) return Status::InvalidArgument("rank " + std::to_string(r) + " holds no stage");
  }
  for (int r = 0; r < p.pp_size; ++r) {
    for (size_t i = 0; i < p.ranks[r].size(); ++i) {
      const Action& a = p.ranks[r][i];
      const bool reduce = IsReduceGrad(a.type);
      const bool mb_ok = reduce ? a.microbatch == -1 : (a.microbatch >= 0 && a.microbatch < p.num_microbatches);
      // Built only for an error: programs of 10^5 actions are checked in hot loops.
      auto where_of = [&] {
        return "rank " + std::to_string(r) + ", action " + std::to_string(i) + " '" + a.ToString() + "'";
      };
      if (IsOverlap(a.type)) {  // the B half: a different stage of the same rank
        if (a.b_stage < 0 || a.b_stage >= p.num_stages)
          return Status::InvalidArgument(where_of() + ": the B half's stage is not in [0, " +
                                         std::to_string(p.num_stages) + ")");
        if (a.b_microbatch < 0 || a.b_microbatch >= p.num_microbatches)
          return Status::InvalidArgument(where_of() + ": the B half's microbatch is not in [0, " +
                                         std::to_string(p.num_microbatches) + ")");
        if (p.stage_to_rank[a.b_stage] != r)
          return Status::InvalidArgument(where_of() + ": the B half's stage " + std::to_string(a.b_stage) +
                                         " lives on rank " + std::to_string(p.stage_to_rank[a.b_stage]));
        if (a.b_stage == a.stage)
          return Status::InvalidArgument(where_of() + ": both halves of an OVERLAP_F_B are on stage " +
                                         std::to_string(a.stage) + " (a pair overlaps two different stages)");
      } else if (a.b_stage != -1 || a.b_microbatch != -1) {
        return Status::InvalidArgument(where_of() + ": only an OVERLAP_F_B has a B half");
      }
      if (a.stage >= 0 && a.stage < p.num_stages && mb_ok && p.stage_to_rank[a.stage] == r) continue;
      const std::string where = where_of();
      if (a.stage < 0 || a.stage >= p.num_stages)
        return Status::InvalidArgument(where + ": stage is not in [0, " + std::to_string(p.num_stages) + ")");
      if (reduce && !mb_ok)
        return Status::InvalidArgument(where + ": REDUCE_GRAD has microbatch -1, not " + std::to_string(a.microbatch));
      if (!mb_ok)
        return Status::InvalidArgument(where + ": microbatch is not in [0, " + std::to_string(p.num_microbatches) +
                                       ")");
      if (p.stage_to_rank[a.stage] != r)
        return Status::InvalidArgument(where + ": stage " + std::to_string(a.stage) + " lives on rank " +
                                       std::to_string(p.stage_to_rank[a.stage]));
    }
  }
  return Status::Ok();
}

std::string FormatGrid(const Program& program, const std::vector<GridMark>& marks, int context) {
  size_t rows = 0;
  for (const auto& r : program.ranks) rows = std::max(rows, r.size());
  size_t width = 9;  // "Rank 12" plus spaces
  for (const auto& r : program.ranks)
    for (const auto& a : r) width = std::max(width, a.ToString().size() + 2);
  auto marked = [&](int rank, size_t idx) {
    for (const auto& m : marks)
      if (m.rank == rank && m.index == static_cast<int>(idx)) return true;
    return false;
  };
  std::vector<bool> show(rows + 1, marks.empty());
  for (const auto& m : marks) {
    for (int d = -context; d <= context; ++d) {
      long row = static_cast<long>(m.index) + d;
      if (row >= 0 && row <= static_cast<long>(rows)) show[row] = true;
    }
  }
  std::string out = "          ";
  for (int r = 0; r < program.pp_size; ++r) {
    std::string h = "Rank " + std::to_string(r);
    h.resize(width, ' ');
    out += h;
  }
  out += "\n";
  bool skipped = false;
  for (size_t row = 0; row <= rows; ++row) {
    bool any_mark = false;
    for (int r = 0; r < program.pp_size; ++r) any_mark |= marked(r, row);
    if (row == rows && !any_mark) break;
    if (!show[row]) {
      if (!skipped) out += "   ...\n";
      skipped = true;
      continue;
    }
    skipped = false;
    char head[32];
    std::snprintf(head, sizeof(head), "Step %03zu: ", row);
    out += head;
    for (int r = 0; r < program.pp_size; ++r) {
      const auto& list = program.ranks[r];
      std::string cell = row < list.size() ? list[row].ToString() : (row == list.size() ? "(end)" : "");
      if (marked(r, row)) cell = "[" + cell + "]";
      cell.resize(width, ' ');
      out += cell;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    if (any_mark) out += "  <-- ERROR HERE";
    out += "\n";
  }
  return out;
}

}  // namespace pw
