// ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", §6): two stages
// per rank in V placement (Placement::kV: rank r holds stages r and
// 2P - 1 - r), backward split into I and W. The registry refuses any other
// number of stages per rank (--virtual-stages).
//
// The V puts the first and the last stage on rank 0, so the loss gradient
// starts back where the forward began and no rank waits at the turn of the V
// as 1F1B's rank 0 does: with F = I = W per stage the order can be zero-bubble
// at 1F1B's memory (2P stage activations = P microbatches through both of
// the rank's stages).
//
// Three candidates, each scored with Simulate() on the request's per-stage
// costs (smallest steady_step_s, then makespan; the searches are skipped
// when the hand order meets the lower bounds of both, as it does for unit
// costs and m >= 2P - 1):
//
// 1. The hand-derived order of §6 (the structure PyTorch's
//    ScheduleZBVZeroBubble also uses, docs/ALGORITHMS.md §3). Derivation with unit
//    stage costs and comm 0 (r is 0-based; chunk 0 = stage r, chunk 1 =
//    stage 2P - 1 - r):
//    - microbatch 0 reaches stage s at time s, so rank r starts at time r
//      and the chunk-1 input of microbatch 0 arrives at 2P - 1 - r. Rank r
//      can therefore run 2P - 1 - r - r = 2(P - r) - 1 chunk-0 forwards back
//      to back before it (the paper's "2p - i chunk-1 F's" for worker
//      i = r + 1, in the paper's 1-based chunk names).
//    - from then on chunk-1 inputs arrive one per unit (rank r + 1 emits one
//      every other unit while it alternates too), and the first gradient
//      returns to rank r after the turn of the V, P - 1 - r ranks up and
//      back, i.e. 2r units after its first chunk-1 forward would end if it
//      ran them back to back: rank r fills those 2r units with r pairs
//      (F1, F0) (the paper's "i - 1 chunk-2 F's"; 2P - 1 forwards in all).
//    - then P - r triples (F1, I1, W1): the rank's chunk-1 pipeline is now
//      full (P chunk-1 forwards ahead of their I's would exceed the memory,
//      so each F1 is matched by an I1 and a W1), and the chunk-0 gradients
//      start returning P - r triples later (the rank's first I0 waits for
//      microbatch 0 to go down the remaining V).
//    - steady state (F0, I0, W0, F1, I1, W1) until every pass is placed;
//      a pass whose kind is exhausted is skipped (this is the cool-down).
//    Memory: 2P - 1 activations after the warm-up, each F followed by an I
//    and a W, so the peak is 2P stage activations (P microbatches through
//    both stages, 1F1B's memory) when activation = wstash. For m < 2P - 1
//    the order is built for n = 2P - 1 microbatches and the passes of
//    microbatches >= m are dropped (dropping passes never delays the rest,
//    so the order stays deadlock-free; PyTorch pads the same way). With
//    unit costs and m >= 2P the steady step is exactly 6m (zero bubble).
// 2. The memory-aware greedy of zb_auto.cc (docs/ALGORITHMS.md "ZB-V greedy"),
//    which adapts to non-uniform costs and to other memory limits: forwards
//    run while inputs are there and the memory limit allows, the second
//    stage (the returning half of the V) goes first for both F and I, gaps
//    are filled with W's, and its flag grid is searched.
// 3. The authors' round construction (zb_v_rounds.cc, their zbv.py), four
//    flag settings. The run that construction itself would pick (by its own
//    time estimate) sets a memory cap: only candidates whose largest
//    per-rank activation peak is within it compete, so ZB-V never needs
//    more memory than the authors' schedule and is never slower than it
//    (bench/v_reference_bench, tests/schedules/v_reference_test.cc).
// The hand order is a candidate only if its peak fits the memory limit.
//
// Memory limit: the request's per rank (RankMemoryLimit) if set, else ZB-V's default of 1F1B's
// memory, P microbatches through both stages of the rank:
// P x max over ranks of (activation[r] + activation[2P - 1 - r]) (with equal
// stages: 2P stage activations). Infeasible, naming --memory-limit, if not
// even one microbatch fits. Any m >= 1 is valid (small m just has bubbles).
#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "schedules/generators/generators.h"
#include "schedules/simulate.h"

namespace pw {

namespace {

// Rank r's passes of the §6 pattern (see the top of the file), V placement,
// for n >= m microbatches of which those >= m are dropped. Split at the
// rank's last forward: `prefix` ends with it; `tail_i` holds the I's after
// it and `tail_w` their W's, both in pattern order.
struct RankPattern {
  std::vector<Action> prefix, tail_i, tail_w;
};

RankPattern PatternOfRank(int P, int m, int r, int n) {
  const std::array<int, 2> stage = {r, 2 * P - 1 - r};
  const ActionType types[3] = {ActionType::kF, ActionType::kI, ActionType::kW};
  std::vector<Action> all;
  // next[type][chunk]: next microbatch of that pass kind; type 0 F, 1 I, 2 W.
  int next[3][2] = {{0, 0}, {0, 0}, {0, 0}};
  auto emit = [&](int type, int chunk) {
    int& k = next[type][chunk];
    if (k >= n) return;  // this kind is exhausted (cool-down)
    const int mb = k++;
    if (mb < m) all.push_back(MakeAction(stage[chunk], types[type], mb));
  };
  for (int k = 0; k < 2 * (P - r) - 1; ++k) emit(0, 0);
  for (int k = 0; k < r; ++k) {
    emit(0, 1);
    emit(0, 0);
  }
  for (int k = 0; k < P - r; ++k) {
    emit(0, 1);
    emit(1, 1);
    emit(2, 1);
  }
  while (next[2][0] < n || next[2][1] < n)
    for (int chunk = 0; chunk < 2; ++chunk)
      for (int type = 0; type < 3; ++type) emit(type, chunk);

  size_t last_f = 0;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].type == ActionType::kF) last_f = i;
  RankPattern out;
  out.prefix.assign(all.begin(), all.begin() + static_cast<long>(last_f) + 1);
  for (size_t i = last_f + 1; i < all.size(); ++i)
    (all[i].type == ActionType::kI ? out.tail_i : out.tail_w).push_back(all[i]);
  return out;
}

// The §6 order for req (compute-only, V placement), with the cool-down's W's
// held back: first every rank runs its tail I's back to back and all tail
// W's last; one simulation gives each tail I's start; then each rank's
// pending W's (FIFO) are moved into the idle gaps before its tail I's where
// they fit whole. A W that fits a gap delays nothing, so the I's keep their
// times and the rank ends up to (the idle time it filled) earlier: the
// paper's staircase of W's in the ZB-V cool-down. Errors: Internal if the
// pattern does not simulate (a bug).
StatusOr<Program> HandOrder(const ScheduleRequest& req) {
  const int P = req.pp_size;
  const int m = req.num_microbatches;
  const int n = std::max(m, 2 * P - 1);
  std::vector<RankPattern> pattern;
  Program prog = MakeEmptyProgram(req, 2, Placement::kV);
  for (int r = 0; r < P; ++r) {
    pattern.push_back(PatternOfRank(P, m, r, n));
    const RankPattern& rp = pattern.back();
    auto& list = prog.ranks[r];
    list = rp.prefix;
    list.insert(list.end(), rp.tail_i.begin(), rp.tail_i.end());
    list.insert(list.end(), rp.tail_w.begin(), rp.tail_w.end());
  }
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(prog, req.costs));
  for (int r = 0; r < P; ++r) {
    const RankPattern& rp = pattern[r];
    auto& list = prog.ranks[r];
    list = rp.prefix;
    double t = sim.timing[r][rp.prefix.size() - 1].end;
    size_t w_next = 0, w_ready = 0;  // tail_w[w_next, w_ready) have run their I
    for (size_t k = 0; k < rp.tail_i.size(); ++k) {
      const ActionTiming& it = sim.timing[r][rp.prefix.size() + k];
      while (w_next < w_ready) {
        const double w = req.costs.stages[rp.tail_w[w_next].stage].w;
        if (t + w > it.start + 1e-9 * std::max(1.0, it.start)) break;
        list.push_back(rp.tail_w[w_next++]);
        t += w;
      }
      list.push_back(rp.tail_i[k]);
      t = it.end;
      ++w_ready;  // tail_w is in the same order as tail_i
    }
    list.insert(list.end(), rp.tail_w.begin() + static_cast<long>(w_next), rp.tail_w.end());
  }
  return prog;
}

// True if every rank's activation peak (static bytes excluded, costs.memory
// units) is within its limit.

}  // namespace

// Generates ZB-V for req (P ranks, v must be 2, per-stage costs of size 2P):
// the better of the §6 hand order and the greedy (see the top of the file).
// Errors: InvalidArgument for v != 2 (--virtual-stages); Infeasible naming
// --memory-limit when not even one microbatch fits the limit.
StatusOr<Program> GenerateZBV(const ScheduleRequest& req) {
  const int P = req.pp_size;
  if (req.virtual_stages != 2)  // the registry already enforces this
    return Status::InvalidArgument("ZB-V needs exactly 2 stages per rank (--virtual-stages), got " +
                                   std::to_string(req.virtual_stages));
  int64_t per_microbatch = 0;  // both stages of the heaviest rank
  for (int r = 0; r < P; ++r)
    per_microbatch =
        std::max(per_microbatch, req.costs.memory[r].activation + req.costs.memory[2 * P - 1 - r].activation);
  const std::vector<double> limits = RankLimits(req, static_cast<double>(P) * static_cast<double>(per_microbatch));
  StatusOr<Program> hand_or = HandOrder(req);
  if (!hand_or.ok()) return Status::Internal("ZB-V hand order: " + hand_or.status().message());
  Program hand = std::move(*hand_or);
  StatusOr<SimResult> hand_sim = Simulate(hand, req.costs);
  if (!hand_sim.ok()) return Status::Internal("ZB-V hand order is invalid: " + hand_sim.status().message());
  const bool hand_fits = FitsMemoryLimits(*hand_sim, limits);
  // If the hand order meets both lower bounds of the score (no rank idles:
  // steady = the busiest rank's work; makespan = max over ranks of the
  // earliest possible first start, after the forwards of the stages below,
  // plus its work), nothing can beat it: skip the greedy search.
  if (hand_fits) {
    double max_busy = 0, makespan_bound = 0, first_start = 0;
    for (int r = 0; r < P; ++r) {
      if (r > 0)
        first_start += req.costs.stages[r - 1].f + req.costs.comm.MessageSeconds(req.costs.memory[r - 1].send_forward);
      max_busy = std::max(max_busy, hand_sim->per_rank[r].busy_s);
      makespan_bound = std::max(makespan_bound, first_start + hand_sim->per_rank[r].busy_s);
    }
    const double tol = 1e-9 * std::max(1.0, hand_sim->makespan_s);
    if (hand_sim->steady_step_s <= max_busy + tol && hand_sim->makespan_s <= makespan_bound + tol) return hand;
  }
  // The other candidates: the greedy and the authors' round construction
  // at the same limits. The round construction's
  // own pick sets the memory cap (its peak): among the candidates within the
  // cap and the limits, the best by (steady_step_s, makespan) wins.
  std::vector<Program> pool;
  StatusOr<Program> greedy = ZeroBubbleGreedy(req, 2, Placement::kV, limits, "ZB-V");
  if (!greedy.ok() && greedy.status().code() != StatusCode::kInfeasible) return greedy.status();
  int own = -1;
  std::vector<Program> rounds = ZBVRoundCandidates(req, limits, &own);
  const int own_index = own < 0 ? -1 : static_cast<int>(own + (hand_fits ? 1 : 0) + (greedy.ok() ? 1 : 0));
  if (hand_fits) pool.push_back(hand);
  if (greedy.ok()) pool.push_back(*greedy);
  for (auto& p : rounds) pool.push_back(std::move(p));
  if (pool.empty()) return greedy.status();
  std::vector<SimResult> sims;
  for (const Program& p : pool) {
    StatusOr<SimResult> sim = Simulate(p, req.costs);
    if (!sim.ok()) return Status::Internal("ZB-V candidate does not simulate: " + sim.status().message());
    sims.push_back(std::move(*sim));
  }
  auto max_peak = [](const SimResult& sim) {
    int64_t peak = 0;
    for (const auto& r : sim.per_rank) peak = std::max(peak, r.peak_memory_bytes - r.start_memory_bytes);
    return peak;
  };
  const int64_t cap = own_index >= 0 ? max_peak(sims[own_index]) : std::numeric_limits<int64_t>::max();
  int best = -1;
  for (size_t k = 0; k < pool.size(); ++k) {
    if (max_peak(sims[k]) > cap || !FitsMemoryLimits(sims[k], limits)) continue;
    if (best >= 0) {
      const SimResult& b = sims[best];
      const double tol = 1e-9 * std::max(1.0, b.steady_step_s);
      const bool better = sims[k].steady_step_s < b.steady_step_s - tol ||
                          (sims[k].steady_step_s <= b.steady_step_s + tol && sims[k].makespan_s < b.makespan_s - tol);
      if (!better) continue;
    }
    best = static_cast<int>(k);
  }
  if (best < 0) return greedy.ok() ? Status::Internal("ZB-V: no candidate within its limits") : greedy.status();
  return std::move(pool[best]);
}

}  // namespace pw
