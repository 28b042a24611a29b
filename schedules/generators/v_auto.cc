// V-auto (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory",
// arXiv 2405.15362, §3-§4 and Appendix A; the authors' search is
// scheduler/v_auto_schedule.py in sail-sg/zero-bubble-pipeline-parallelism):
// the lowest-bubble V-shape schedule (two stages per rank, rank r holds
// stages r and 2P - 1 - r, backward split into I and W) whose activation
// peak fits a memory limit. It fills the range between V-Min's memory
// (about a third of 1F1B's) and ZB-V's (1F1B's).
//
// The paper's principle: a schedule is one building block (each rank's
// passes of one microbatch at fixed unit-slot offsets) repeated every 6
// slots, and its peak memory is about ceil(lifespan / 6) chunk activations.
// The search enumerates blocks the way the authors do: rank 0's F at slot 0
// and its f, B, b in distinct slots of the period (W, w in the next free
// slots), the following ranks shifted by a uniform offset [d, -1, d, -1]
// (F and B move d slots later per rank going down the V, f and b one slot
// earlier), with a second offset d' <= d after the first len0 ranks
// (d, d' in 1..5, len0 in 1..P-1). Each block goes through
// repeat -> squeeze -> reorder warm-up -> remove padding microbatches ->
// reorder cool-down -> fill bubbles without raising the peak
// (v_slots.cc BlockSchedule); a block whose peak passes the limit ends that
// len0 scan, as in the reference.
//
// Every result is timed with Simulate() on the request's costs and
// communication; the best (smallest steady_step_s = the paper's cost, then
// makespan) whose real activation peak fits every rank's limit wins. V-Min,
// V-Half and ZB-V at the same limit are candidates too, so V-auto is never
// worse than them at the limits they fit.
//
// Memory limit: the request's per rank (--memory-limit) if set, else ZB-V's
// default, P microbatches through both stages of the rank. The block search
// counts chunk activations; a limit of L bytes allows
// floor(L / max over stages of max(activation, wstash)) of them (at most
// 2P). Infeasible, naming --memory-limit, when no candidate fits.
#include <algorithm>
#include <cmath>
#include <set>

#include "schedules/generators/generators.h"
#include "schedules/generators/v_slots.h"
#include "schedules/simulate.h"

namespace pw {

namespace {

// Keeps the better of two programs by (steady_step_s, makespan_s).
struct Best {
  bool found = false;
  Program program;
  double steady = 0, makespan = 0;
  void Offer(Program p, const SimResult& sim) {
    const double tol = 1e-9 * std::max(1.0, sim.steady_step_s);
    if (found && (sim.steady_step_s > steady + tol ||
                  (sim.steady_step_s >= steady - tol && sim.makespan_s >= makespan - tol)))
      return;
    found = true;
    program = std::move(p);
    steady = sim.steady_step_s;
    makespan = sim.makespan_s;
  }
};

}  // namespace

StatusOr<Program> VBlockSearch(const ScheduleRequest& req, const std::vector<double>& limits) {
  const int P = req.pp_size;
  const int m = req.num_microbatches;
  double unit = 0;  // bytes one chunk activation can hold at most
  for (const auto& mem : req.costs.memory)
    unit = std::max(unit, static_cast<double>(std::max(mem.activation, mem.wstash)));
  const double low = *std::min_element(limits.begin(), limits.end());
  int max_mem = 2 * P;
  if (unit > 0) max_mem = static_cast<int>(std::min<double>(2 * P, std::floor(low / unit + 1e-9)));
  Best best;
  std::set<std::string> seen;
  Status error = Status::Ok();
  ForEachVBlock(P, [&](const std::vector<std::array<int, 6>>& block) {
    SlotGrid grid;
    int peak = 0;
    const bool ok = BlockSchedule(P, m, block, std::min(2 * P, max_mem), &grid, &peak);
    if (peak > 2 * P || peak > max_mem) return true;
    if (!ok) return false;
    std::string key;
    for (const auto& row : grid) key += row + '|';
    if (!seen.insert(key).second) return false;
    Program prog = ProgramFromSlots(req, grid);
    StatusOr<SimResult> sim = Simulate(prog, req.costs);
    if (!sim.ok()) {
      error = Status::Internal("V-auto block order does not simulate: " + sim.status().message());
      return false;
    }
    if (FitsMemoryLimits(*sim, limits)) best.Offer(std::move(prog), *sim);
    return false;
  });
  PW_RETURN_IF_ERROR(error);
  if (!best.found)
    return Status::Infeasible("V-auto: no building block fits " + RankLimitText(req, 0) +
                              " (activation bytes per rank); raise --memory-limit");
  return best.program;
}

StatusOr<Program> GenerateVAuto(const ScheduleRequest& req) {
  const int P = req.pp_size;
  if (req.virtual_stages != 2)  // the registry already enforces this
    return Status::InvalidArgument("V-auto needs exactly 2 stages per rank (--virtual-stages), got " +
                                   std::to_string(req.virtual_stages));
  int64_t per_microbatch = 0;  // both stages of the heaviest rank (ZB-V's default)
  for (int r = 0; r < P; ++r)
    per_microbatch =
        std::max(per_microbatch, req.costs.memory[r].activation + req.costs.memory[2 * P - 1 - r].activation);
  const std::vector<double> limits = RankLimits(req, static_cast<double>(P) * static_cast<double>(per_microbatch));
  {
    const Program one = OneMicrobatchProgram(req, 2, Placement::kV, true);
    PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(one, req.costs));
    for (int r = 0; r < P; ++r)
      if (static_cast<double>(sim.per_rank[r].peak_memory_bytes - sim.per_rank[r].start_memory_bytes) > limits[r])
        return Status::Infeasible("V-auto: one microbatch through both stages of rank " + std::to_string(r) +
                                  " needs more than " + RankLimitText(req, r) + "; raise --memory-limit");
  }
  Best best;
  StatusOr<Program> searched = VBlockSearch(req, limits);
  if (searched.ok()) {
    PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(*searched, req.costs));
    best.Offer(std::move(*searched), sim);
  } else if (searched.status().code() != StatusCode::kInfeasible) {
    return searched.status();
  }
  // The fixed families at the same limit (they ignore it; keep those that fit).
  for (auto* gen : {&GenerateVMin, &GenerateVHalf, &GenerateZBV}) {
    StatusOr<Program> p = (*gen)(req);
    if (!p.ok()) {
      if (p.status().code() == StatusCode::kInfeasible) continue;
      return p.status();
    }
    PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(*p, req.costs));
    if (FitsMemoryLimits(sim, limits)) best.Offer(std::move(*p), sim);
  }
  if (!best.found)
    return Status::Infeasible("V-auto: no V-shape schedule fits " + RankLimitText(req, 0) +
                              " (activation bytes per rank); raise --memory-limit");
  return best.program;
}

}  // namespace pw
