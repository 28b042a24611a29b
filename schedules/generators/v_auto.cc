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
// the lowest activation peak, then makespan) whose real activation peak fits
// every rank's limit wins. V-Min,
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
#include <map>
#include <set>

#include "schedules/generators/generators.h"
#include "schedules/generators/v_slots.h"
#include "schedules/simulate.h"

namespace pw {

namespace {

// The better of two results: smaller steady step, then smaller activation
// peak (the largest over ranks), then smaller makespan.
bool Better(double steady, double peak, double makespan, double b_steady, double b_peak, double b_makespan) {
  const double tol = 1e-9 * std::max(1.0, b_steady);
  if (steady < b_steady - tol) return true;
  if (steady > b_steady + tol) return false;
  if (peak != b_peak) return peak < b_peak;
  return makespan < b_makespan - 1e-9 * std::max(1.0, b_makespan);
}

double MaxPeak(const SimResult& sim) {
  int64_t peak = 0;
  for (const auto& r : sim.per_rank) peak = std::max(peak, r.peak_memory_bytes - r.start_memory_bytes);
  return static_cast<double>(peak);
}

// Keeps the best program offered (Better).
struct Best {
  bool found = false;
  Program program;
  double steady = 0, peak = 0, makespan = 0;
  void Offer(Program p, const SimResult& sim) {
    if (found && !Better(sim.steady_step_s, MaxPeak(sim), sim.makespan_s, steady, peak, makespan)) return;
    found = true;
    program = std::move(p);
    steady = sim.steady_step_s;
    peak = MaxPeak(sim);
    makespan = sim.makespan_s;
  }
};

// Times a grid's order the way Simulate() times a compute-only program
// (each pass starts when its rank is free and its input is done, plus the
// message time between ranks), without building the program: the search
// meets thousands of grids. Returns false on an order that cannot run (it
// would deadlock). `steady`, `makespan` as SimResult; `peak`: the largest
// activation peak over ranks (bytes); `fits`: every rank's activation walk
// within `limits`.
bool FastEval(const ScheduleRequest& req, const SlotGrid& grid, const std::vector<double>& limits, double* steady,
              double* makespan, double* peak, bool* fits) {
  const int P = req.pp_size;
  const int m = req.num_microbatches;
  const int S = 2 * P;
  // end[kind 0 F, 1 I][stage * m + mb]
  std::vector<double> end_f(static_cast<size_t>(S) * m, -1), end_i(static_cast<size_t>(S) * m, -1);
  std::vector<size_t> pos(P, 0);
  std::vector<double> free_at(P, 0), first(P, -1);
  std::vector<std::array<int, 6>> count(P, {0, 0, 0, 0, 0, 0});
  std::vector<double> mem(P, 0);
  *fits = true;
  *peak = 0;
  size_t left = 0;
  for (const auto& row : grid)
    for (char c : row) left += c != ' ';
  static const std::string kinds = "FfBbWw";
  while (left > 0) {
    bool progress = false;
    for (int r = 0; r < P; ++r) {
      const std::string& row = grid[r];
      while (pos[r] < row.size()) {
        const char c = row[pos[r]];
        if (c == ' ') {
          ++pos[r];
          continue;
        }
        const int k = static_cast<int>(kinds.find(c));
        const int chunk = (k == 0 || k == 3 || k == 5) ? 0 : 1;
        const int s = chunk == 0 ? r : S - 1 - r;
        const int mb = count[r][k];
        const StageCost& cost = req.costs.stages[s];
        const StageMemory& sm = req.costs.memory[s];
        double start = free_at[r], dur = 0, delta = 0;
        if (k < 2) {  // F: input from stage s - 1
          if (s > 0) {
            const double in = end_f[static_cast<size_t>(s - 1) * m + mb];
            if (in < 0) break;
            const int src_rank = s - 1 < P ? s - 1 : S - s;  // rank of stage s - 1
            start = std::max(
                start, in + (src_rank != r ? req.costs.comm.MessageSeconds(req.costs.memory[s - 1].send_forward) : 0));
          }
          dur = cost.f;
          delta = static_cast<double>(sm.activation);
        } else if (k < 4) {  // I: input from stage s + 1, or the F of the last stage
          const double in =
              s + 1 < S ? end_i[static_cast<size_t>(s + 1) * m + mb] : end_f[static_cast<size_t>(s) * m + mb];
          if (in < 0) break;
          const int src_rank = s + 1 < S ? (s + 1 < P ? s + 1 : S - 2 - s) : r;
          start = std::max(
              start, in + (src_rank != r ? req.costs.comm.MessageSeconds(req.costs.memory[s + 1].send_backward) : 0));
          dur = cost.i;
          delta = static_cast<double>(sm.wstash - sm.activation);
        } else {
          const double in = end_i[static_cast<size_t>(s) * m + mb];
          if (in < 0) break;
          start = std::max(start, in);
          dur = cost.w;
          delta = -static_cast<double>(sm.wstash);
        }
        if (k < 2 && first[r] < 0) first[r] = start;
        const double end = start + dur;
        if (k < 2) end_f[static_cast<size_t>(s) * m + mb] = end;
        if (k >= 2 && k < 4) end_i[static_cast<size_t>(s) * m + mb] = end;
        free_at[r] = end;
        mem[r] += delta;
        *peak = std::max(*peak, mem[r]);
        if (mem[r] > limits[r] + 1e-9 * std::max(1.0, limits[r])) *fits = false;
        ++count[r][k];
        ++pos[r];
        --left;
        progress = true;
      }
    }
    if (!progress) return false;
  }
  *steady = 0;
  *makespan = 0;
  for (int r = 0; r < P; ++r) {
    *steady = std::max(*steady, free_at[r] - std::max(first[r], 0.0));
    *makespan = std::max(*makespan, free_at[r]);
  }
  return true;
}

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
  bool have = false;
  SlotGrid best_grid;
  double best_steady = 0, best_peak = 0, best_makespan = 0;
  std::set<std::string> seen;
  // Blocks repeat in the enumeration (with d' = d every len0 gives the same
  // block): the outcome of each block once.
  std::map<std::vector<std::array<int, 6>>, std::pair<bool, int>> done;
  // No order's steady step is below the busiest rank's work: once a block
  // reaches it, later blocks can at best tie (the enumeration's first
  // optimum is kept, as in the reference), so the search stops.
  double work = 0;
  for (int r = 0; r < P; ++r) {
    double w = 0;
    for (int s : {r, 2 * P - 1 - r}) w += req.costs.stages[s].f + req.costs.stages[s].i + req.costs.stages[s].w;
    work = std::max(work, w * m);
  }
  bool optimal = false;
  Status error = Status::Ok();
  ForEachVBlock(P, [&](const std::vector<std::array<int, 6>>& block) {
    if (optimal) return true;
    auto known = done.find(block);
    if (known != done.end()) {
      const int peak = known->second.second;
      return peak > 2 * P || peak > max_mem;  // an ok block was offered already
    }
    SlotGrid grid;
    int peak = 0;
    const bool ok = BlockSchedule(P, m, block, std::min(2 * P, max_mem), &grid, &peak);
    done[block] = {ok, peak};
    if (peak > 2 * P || peak > max_mem) return true;
    if (!ok) return false;
    std::string key;
    for (const auto& row : grid) key += row + '|';
    if (!seen.insert(key).second) return false;
    double steady = 0, makespan = 0, peak_bytes = 0;
    bool fits = false;
    if (!FastEval(req, grid, limits, &steady, &makespan, &peak_bytes, &fits)) {
      error = Status::Internal("V-auto block order cannot run (a bug)");
      return false;
    }
    if (!fits) return false;
    if (!have || Better(steady, peak_bytes, makespan, best_steady, best_peak, best_makespan)) {
      have = true;
      best_grid = grid;
      best_steady = steady;
      best_peak = peak_bytes;
      best_makespan = makespan;
      optimal = steady <= work + 1e-9 * std::max(1.0, work);
    }
    return false;
  });
  PW_RETURN_IF_ERROR(error);
  if (!have)
    return Status::Infeasible("V-auto: no building block fits " + RankLimitText(req, 0) +
                              " (activation bytes per rank); raise --memory-limit");
  return ProgramFromSlots(req, best_grid);
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
