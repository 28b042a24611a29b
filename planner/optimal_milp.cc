// The MILP of optimal_milp.h and its CBC solve (arXiv 2401.10241 Appendix G).
#include "planner/optimal_milp.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/format.h"
#include "schedules/simulate.h"

namespace pw {

namespace {

constexpr int kF = 0, kI = 1, kW = 2;

// One pass: (stage, microbatch, kind F/I/W).
struct Pass {
  int stage, mb, kind;
};

// The heuristic order with the smallest simulated makespan that fits the
// request's limits (1F1B's B split into I then W), its name and timing.
struct WarmStart {
  Program program;
  SimResult sim;
  std::string name;
};

StatusOr<WarmStart> BestHeuristic(const ScheduleRequest& req) {
  std::optional<WarmStart> best;
  Status last = Status::Ok();
  for (const char* name : {"zb-auto", "zb-h1", "zb-h2", "1f1b"}) {
    ScheduleRequest r = req;
    r.schedule = name;
    r.virtual_stages = 1;
    StatusOr<Program> prog = GenerateSchedule(r);
    if (!prog.ok()) {
      if (std::string(name) == "zb-auto") last = prog.status();
      continue;
    }
    Program p = *prog;
    for (auto& list : p.ranks) {
      std::vector<Action> split;
      for (const Action& a : list) {
        if (a.type != ActionType::kB) {
          split.push_back(a);
          continue;
        }
        split.push_back(MakeAction(a.stage, ActionType::kI, a.microbatch));
        split.push_back(MakeAction(a.stage, ActionType::kW, a.microbatch));
      }
      list = split;
    }
    StatusOr<SimResult> sim = Simulate(p, req.costs);
    if (!sim.ok()) continue;
    bool fits = true;  // the split 1F1B holds no more than 1F1B; check anyway
    for (int rank = 0; rank < p.pp_size; ++rank)
      if (static_cast<double>(sim->per_rank[rank].peak_memory_bytes - sim->per_rank[rank].start_memory_bytes) >
          RankMemoryLimit(req, rank))
        fits = false;
    if (!fits) continue;
    if (!best || sim->makespan_s < best->sim.makespan_s) best = WarmStart{p, *sim, name};
  }
  if (!best) return Status::Infeasible("optimal: no order fits the memory limit (--memory-limit): " + last.message());
  // The model runs stage 0's forwards in microbatch order (symmetry
  // breaking): renumber the microbatches in the order of rank 0's F's (the
  // same order under other names; the heuristics already run them so).
  {
    std::vector<int> rename(req.num_microbatches, -1);
    int next = 0;
    for (const Action& a : best->program.ranks[0])
      if (a.type == ActionType::kF && a.stage == 0) rename[a.microbatch] = next++;
    for (auto& list : best->program.ranks)
      for (Action& a : list) a.microbatch = rename[a.microbatch];
  }
  // The model orders each stage's W's as its I's (symmetry breaking): give
  // the k-th W of a rank the microbatch of its k-th I. Same times and memory
  // (a stage's W's are alike), still after their I's.
  for (auto& list : best->program.ranks) {
    std::vector<int> i_order;
    for (const Action& a : list)
      if (a.type == ActionType::kI) i_order.push_back(a.microbatch);
    size_t next = 0;
    for (Action& a : list)
      if (a.type == ActionType::kW) a.microbatch = i_order[next++];
  }
  StatusOr<SimResult> sim = Simulate(best->program, req.costs);
  if (!sim.ok()) return Status::Internal("optimal: warm start relabelling: " + sim.status().message());
  best->sim = *sim;
  return *best;
}

// Owns a Cbc_Model.
struct CbcDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};

}  // namespace

Status CheckOptimalRequest(const ScheduleRequest& req, const OptimalOptions& options) {
  if (!std::isfinite(options.time_limit_s) || options.time_limit_s <= 0)
    return Status::InvalidArgument("--time-limit must be a positive number of seconds, got " +
                                   FormatShort(options.time_limit_s));
  if (req.pp_size < 1) return Status::InvalidArgument("--pp must be >= 1, got " + std::to_string(req.pp_size));
  if (req.num_microbatches < 1)
    return Status::InvalidArgument("--num-microbatches must be >= 1, got " + std::to_string(req.num_microbatches));
  if (req.virtual_stages != 0 && req.virtual_stages != 1)
    return Status::InvalidArgument("optimal schedules one stage per rank (--virtual-stages 1), got " +
                                   std::to_string(req.virtual_stages));
  const int64_t pm = int64_t{req.pp_size} * req.num_microbatches;
  if (pm > kMaxOptimalStageMicrobatches)
    return Status::InvalidArgument("optimal: --pp x --num-microbatches = " + std::to_string(req.pp_size) + " x " +
                                   std::to_string(req.num_microbatches) + " = " + std::to_string(pm) +
                                   " is above the limit of " + std::to_string(kMaxOptimalStageMicrobatches) +
                                   " (the exact problem grows as P m^2 order variables; use a heuristic "
                                   "such as zb-auto for larger pipelines)");
  if (!req.costs.stages.empty() && (static_cast<int>(req.costs.stages.size()) != req.pp_size ||
                                    static_cast<int>(req.costs.memory.size()) != req.pp_size))
    return Status::InvalidArgument("--costs: expected costs for " + std::to_string(req.pp_size) +
                                   " stages (one per rank), got " + std::to_string(req.costs.stages.size()));
  if (req.dp_size > 1)
    return Status::InvalidArgument("optimal: data parallelism (--dp " + std::to_string(req.dp_size) +
                                   ") is not part of the exact model (its REDUCE_GRAD is not scheduled)");
  if (!req.rank_memory_limits.empty() && static_cast<int>(req.rank_memory_limits.size()) != req.pp_size)
    return Status::InvalidArgument("--memory-limit: expected a limit for each of the " + std::to_string(req.pp_size) +
                                   " ranks");
  return Status::Ok();
}

StatusOr<OptimalResult> SolveOptimalSchedule(const ScheduleRequest& request, const OptimalOptions& options) {
  PW_RETURN_IF_ERROR(CheckOptimalRequest(request, options));
  ScheduleRequest req = request;
  req.virtual_stages = 1;
  const int P = req.pp_size, m = req.num_microbatches;
  if (req.costs.stages.empty()) req.costs = UniformCosts(P);
  const StageCosts& c = req.costs;
  PW_ASSIGN_OR_RETURN(WarmStart warm, BestHeuristic(req));

  // Times are solved in units of the longest pass (numbers near 1 keep the
  // big-M rows well conditioned) and scaled back at the end.
  double unit = 0;
  for (const StageCost& sc : c.stages) unit = std::max({unit, sc.f, sc.i, sc.w});
  if (unit <= 0) unit = 1;
  auto dur = [&](const Pass& p) {
    const StageCost& sc = c.stages[p.stage];
    return (p.kind == kF ? sc.f : p.kind == kI ? sc.i : sc.w) / unit;
  };
  auto delta = [&](const Pass& p) {
    const StageMemory& mem = c.memory[p.stage];
    return static_cast<double>(p.kind == kF   ? mem.activation
                               : p.kind == kI ? mem.wstash - mem.activation
                                              : -mem.wstash);
  };
  // Message seconds (scaled) into stage s's F from s-1 and into its I from s+1.
  auto fwd_msg = [&](int s) { return c.comm.MessageSeconds(c.memory[s - 1].send_forward) / unit; };
  auto bwd_msg = [&](int s) { return c.comm.MessageSeconds(c.memory[s + 1].send_backward) / unit; };

  // Columns: E per pass (index PassIndex), then C (makespan), then O's.
  auto pass_index = [&](int s, int k, int kind) { return (s * m + k) * 3 + kind; };
  const int num_passes = 3 * P * m;
  std::vector<Pass> passes(num_passes);
  for (int s = 0; s < P; ++s)
    for (int k = 0; k < m; ++k)
      for (int kind = 0; kind < 3; ++kind) passes[pass_index(s, k, kind)] = {s, k, kind};
  const int col_c = num_passes;

  // Heuristic timing (scaled) and order position per pass, for the warm
  // start and the big-M.
  std::vector<double> warm_end(num_passes, 0);
  std::vector<int> warm_pos(num_passes, 0);
  for (int r = 0; r < P; ++r)
    for (size_t j = 0; j < warm.program.ranks[r].size(); ++j) {
      const Action& a = warm.program.ranks[r][j];
      const int kind = a.type == ActionType::kF ? kF : a.type == ActionType::kI ? kI : kW;
      const int idx = pass_index(a.stage, a.microbatch, kind);
      warm_end[idx] = warm.sim.timing[r][j].end / unit;
      warm_pos[idx] = static_cast<int>(j);
    }
  const double horizon = warm.sim.makespan_s / unit;  // every end <= the incumbent's makespan

  // Constant lower bounds on the makespan (valid cuts, see ALGORITHMS.md):
  // stage s starts no earlier than head[s] and runs its 3m passes; its last
  // F ends no earlier than head[s] + m F, and that microbatch still needs
  // its F's above, its I's back down to s and W(s).
  std::vector<double> head(P, 0);
  for (int s = 1; s < P; ++s) head[s] = head[s - 1] + c.stages[s - 1].f / unit + fwd_msg(s);
  double lower = 0;
  for (int s = 0; s < P; ++s) {
    const StageCost& sc = c.stages[s];
    lower = std::max(lower, head[s] + m * (sc.f + sc.i + sc.w) / unit);
    double chain = head[s] + m * sc.f / unit;
    for (int t = s + 1; t < P; ++t) chain += fwd_msg(t) + c.stages[t].f / unit;
    for (int t = P - 1; t > s; --t) chain += c.stages[t].i / unit + bwd_msg(t - 1);
    chain += (sc.i + sc.w) / unit;
    lower = std::max(lower, chain);
  }

  // Time windows. est[j]: earliest end of pass j along the precedence DAG
  // (with stage 0's forwards in microbatch order); tail[j]: the least time
  // any order still needs after j ends (its successors' longest chain). Every
  // end lies in [est, horizon - tail] for an order no worse than the warm
  // start; both give valid cuts (C >= E + tail) and per-pair big-M's.
  std::vector<double> est(num_passes, 0), tail(num_passes, 0);
  // Memory on stage 0 (forwards in microbatch order): with at most n0 =
  // floor(limit / activation) activations held, when F(0,k) ends at least
  // k + 1 - n0 I's ended before it started, one of them of a microbatch
  // >= k - n0, whose I ends no earlier than its F + the round trip r0 (the
  // forwards above, the I's back down, I(0)). So F(0,k) starts after
  // F(0,k-n0) ends + r0: a valid precedence (0 = no limit).
  int n0 = 0;
  {
    const double limit0 = RankMemoryLimit(req, 0);
    const double act0 = static_cast<double>(c.memory[0].activation);
    if (std::isfinite(limit0) && act0 > 0) n0 = std::max(1, static_cast<int>(std::floor(limit0 / act0)));
    if (n0 >= m) n0 = 0;
  }
  double r0 = c.stages[0].i / unit;
  for (int t = 1; t < P; ++t) r0 += fwd_msg(t) + (c.stages[t].f + c.stages[t].i) / unit + bwd_msg(t - 1);
  for (int k = 0; k < m; ++k) {
    for (int s = 0; s < P; ++s) {
      const int f = pass_index(s, k, kF);
      double ready = s > 0 ? est[pass_index(s - 1, k, kF)] + fwd_msg(s) : 0;
      if (s == 0 && k > 0) ready = std::max(ready, est[pass_index(0, k - 1, kF)]);
      if (s == 0 && n0 > 0 && k >= n0) ready = std::max(ready, est[pass_index(0, k - n0, kF)] + r0);
      est[f] = ready + dur(passes[f]);
    }
    for (int s = P - 1; s >= 0; --s) {
      const int i = pass_index(s, k, kI);
      double ready = est[pass_index(s, k, kF)];
      if (s + 1 < P) ready = std::max(ready, est[pass_index(s + 1, k, kI)] + bwd_msg(s));
      est[i] = ready + dur(passes[i]);
      est[pass_index(s, k, kW)] = est[i] + dur(passes[pass_index(s, k, kW)]);
    }
  }
  for (int k = m - 1; k >= 0; --k) {
    for (int s = 0; s < P; ++s) {
      const int i = pass_index(s, k, kI);
      double t = dur(passes[pass_index(s, k, kW)]);
      if (s > 0)
        t = std::max(t, bwd_msg(s - 1) + dur(passes[pass_index(s - 1, k, kI)]) + tail[pass_index(s - 1, k, kI)]);
      tail[i] = t;
    }
    for (int s = P - 1; s >= 0; --s) {
      const int f = pass_index(s, k, kF);
      double t = dur(passes[pass_index(s, k, kI)]) + tail[pass_index(s, k, kI)];
      if (s + 1 < P)
        t = std::max(t, fwd_msg(s + 1) + dur(passes[pass_index(s + 1, k, kF)]) + tail[pass_index(s + 1, k, kF)]);
      if (s == 0 && k + 1 < m) t = std::max(t, dur(passes[pass_index(0, k + 1, kF)]) + tail[pass_index(0, k + 1, kF)]);
      if (s == 0 && n0 > 0 && k + n0 < m)
        t = std::max(t, r0 + dur(passes[pass_index(0, k + n0, kF)]) + tail[pass_index(0, k + n0, kF)]);
      tail[f] = t;
    }
  }
  // Stage s's last I comes after all its F's and I's (an I needs its own
  // F), so it ends no earlier than head[s] + m (F + I), and its microbatch
  // still needs tail[I]: a constant bound on the makespan.
  for (int s = 0; s < P; ++s)
    lower = std::max(lower, head[s] + m * (c.stages[s].f + c.stages[s].i) / unit + tail[pass_index(s, m - 1, kI)]);
  auto lst = [&](int j) { return std::max(est[j], horizon - tail[j]); };
  const double slack = 1e-9 * (1 + horizon);

  std::unique_ptr<Cbc_Model, CbcDeleter> model(Cbc_newModel());
  Cbc_Model* cbc = model.get();
  for (int j = 0; j < num_passes; ++j)
    Cbc_addCol(cbc, ("E" + std::to_string(j)).c_str(), est[j], lst(j) + slack, 0.0, 0, 0, nullptr, nullptr);
  Cbc_addCol(cbc, "C", std::min(lower, horizon), horizon + slack, 1.0, 0, 0, nullptr, nullptr);
  int rows = 0;
  auto add_row = [&](std::vector<int> cols, std::vector<double> coefs, char sense, double rhs) {
    Cbc_addRow(cbc, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), sense, rhs);
    ++rows;
  };

  // Precedence: E[b] - dur(b) >= E[a] + gap  <=>  E[b] - E[a] >= dur(b) + gap;
  // and the makespan after each pass's least remaining chain.
  for (int s = 0; s < P; ++s)
    for (int k = 0; k < m; ++k) {
      const int f = pass_index(s, k, kF), i = pass_index(s, k, kI), w = pass_index(s, k, kW);
      if (s > 0) add_row({f, pass_index(s - 1, k, kF)}, {1, -1}, 'G', dur(passes[f]) + fwd_msg(s));
      if (s == 0 && k > 0) add_row({f, pass_index(0, k - 1, kF)}, {1, -1}, 'G', dur(passes[f]));  // relabelling
      if (s == 0 && n0 > 0 && k >= n0) add_row({f, pass_index(0, k - n0, kF)}, {1, -1}, 'G', dur(passes[f]) + r0);
      add_row({i, f}, {1, -1}, 'G', dur(passes[i]));
      if (s + 1 < P) add_row({i, pass_index(s + 1, k, kI)}, {1, -1}, 'G', dur(passes[i]) + bwd_msg(s));
      add_row({w, i}, {1, -1}, 'G', dur(passes[w]));
      for (int j : {f, i, w}) add_row({col_c, j}, {1, -1}, 'G', tail[j]);
    }

  // Order of each pair of passes on a stage: fixed (-1: a before b, +1: b
  // before a, forced by precedence or symmetry breaking) or a binary O with
  // O = 1 meaning a before b. order_col[s][a][b] for a < b (local indices).
  const int n = 3 * m;
  std::vector<std::vector<std::vector<int>>> order_col(P, std::vector<std::vector<int>>(n, std::vector<int>(n, 0)));
  const int kBefore = -1, kAfter = -2;  // fixed: a before b / b before a
  int col = col_c + 1;
  int binaries = 0;
  std::vector<int> mip_cols;
  std::vector<double> mip_vals;
  for (int j = 0; j < num_passes; ++j) {
    mip_cols.push_back(j);
    mip_vals.push_back(warm_end[j]);
  }
  mip_cols.push_back(col_c);
  mip_vals.push_back(horizon);
  for (int s = 0; s < P; ++s) {
    auto local = [&](int li) { return pass_index(s, li / 3, li % 3); };
    for (int la = 0; la < n; ++la)
      for (int lb = la + 1; lb < n; ++lb) {
        const Pass& a = passes[local(la)];
        const Pass& b = passes[local(lb)];
        int fixed = 0;
        if (a.mb == b.mb)
          fixed = a.kind < b.kind ? kBefore : kAfter;  // F -> I -> W
        else if (s == 0 && a.kind == kF && b.kind == kF)
          fixed = a.mb < b.mb ? kBefore : kAfter;  // relabel
        const int ea = local(la), eb = local(lb);
        // a window that ends before the other's earliest start fixes the pair
        if (fixed == 0 && lst(ea) + slack <= est[eb] - dur(b)) fixed = kBefore;
        if (fixed == 0 && lst(eb) + slack <= est[ea] - dur(a)) fixed = kAfter;
        if (fixed != 0) {
          order_col[s][la][lb] = fixed;
          if (a.mb != b.mb && !(s == 0 && a.kind == kF && b.kind == kF)) {
            if (fixed == kBefore)
              add_row({eb, ea}, {1, -1}, 'G', dur(b));
            else
              add_row({ea, eb}, {1, -1}, 'G', dur(a));
          }
          continue;
        }
        order_col[s][la][lb] = col;
        Cbc_addCol(cbc, ("O" + std::to_string(col)).c_str(), 0, 1, 0.0, 1, 0, nullptr, nullptr);
        ++binaries;
        // a before b: E[b] - dur(b) >= E[a] - M1 (1 - O)  <=>  E[b] - E[a] - M1 O >= dur(b) - M1,
        // with M1 the most E[a] - E[b] + dur(b) can be in the windows.
        const double m1 = std::max(0.0, lst(ea) - est[eb] + dur(b)) + slack;
        add_row({eb, ea, col}, {1, -1, -m1}, 'G', dur(b) - m1);
        // b before a: E[a] - dur(a) >= E[b] - M2 O  <=>  E[a] - E[b] + M2 O >= dur(a).
        const double m2 = std::max(0.0, lst(eb) - est[ea] + dur(a)) + slack;
        add_row({ea, eb, col}, {1, -1, m2}, 'G', dur(a));
        mip_cols.push_back(col);
        mip_vals.push_back(warm_pos[ea] < warm_pos[eb] ? 1.0 : 0.0);
        ++col;
      }
    // W's of a stage in the order of their I's: O(Wa, Wb) >= O(Ia, Ib).
    for (int ka = 0; ka < m; ++ka)
      for (int kb = ka + 1; kb < m; ++kb) {
        const int oi = order_col[s][3 * ka + kI][3 * kb + kI], ow = order_col[s][3 * ka + kW][3 * kb + kW];
        // Each is a variable (>= 0) or a constant (kBefore = 1, kAfter = 0).
        std::vector<int> cols;
        std::vector<double> coefs;
        double rhs = 0;
        if (ow >= 0)
          cols.push_back(ow), coefs.push_back(1);
        else
          rhs -= ow == kBefore ? 1 : 0;
        if (oi >= 0)
          cols.push_back(oi), coefs.push_back(-1);
        else
          rhs += oi == kBefore ? 1 : 0;
        if (!cols.empty()) add_row(cols, coefs, 'G', rhs);
      }
    // Memory at each pass j: delta(j) + sum over passes before j of their delta <= limit.
    const double limit = RankMemoryLimit(req, s);
    if (std::isfinite(limit)) {
      for (int lj = 0; lj < n; ++lj) {
        double rhs = limit - delta(passes[local(lj)]);
        std::vector<int> cols;
        std::vector<double> coefs;
        for (int lk = 0; lk < n; ++lk) {
          if (lk == lj) continue;
          const double dk = delta(passes[local(lk)]);
          if (dk == 0) continue;
          // "k before j" as a 0/1 expression of the pair's variable.
          const int lo = std::min(lj, lk), hi = std::max(lj, lk);
          const int o = order_col[s][lo][hi];
          const bool k_is_lo = lk == lo;
          if (o == kBefore || o == kAfter) {
            const bool lo_first = o == kBefore;
            if (lo_first == k_is_lo) rhs -= dk;
            continue;
          }
          if (k_is_lo) {  // O = 1: k before j
            cols.push_back(o);
            coefs.push_back(dk);
          } else {  // 1 - O
            rhs -= dk;
            cols.push_back(o);
            coefs.push_back(-dk);
          }
        }
        add_row(cols, coefs, 'L', rhs);
      }
    }
  }

  Cbc_setLogLevel(cbc, 0);
  Cbc_setParameter(cbc, "threads", "1");
  Cbc_setParameter(cbc, "timeMode", "elapsed");
  // CBC 2.10.8 (Debian) crashes in CglPreProcess::postProcess when the time
  // limit stops it early (seen at 0.3 s on P = 4, m = 8): no preprocessing.
  Cbc_setParameter(cbc, "preprocess", "off");
  Cbc_setMaximumSeconds(cbc, options.time_limit_s);
  Cbc_setAllowableGap(cbc, 1e-7);
  Cbc_setAllowableFractionGap(cbc, 0);
  Cbc_setMIPStartI(cbc, static_cast<int>(mip_cols.size()), mip_cols.data(), mip_vals.data());
  const auto t0 = std::chrono::steady_clock::now();
  Cbc_solve(cbc);
  const double solve_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  OptimalResult out;
  out.solve_s = solve_s;
  out.num_binaries = binaries;
  out.num_columns = Cbc_getNumCols(cbc);
  out.num_rows = rows;
  out.warm_start_schedule = warm.name;
  out.warm_start_makespan_s = warm.sim.makespan_s;
  out.time_limit_reached = Cbc_isSecondsLimitReached(cbc) != 0;
  const double* x = Cbc_bestSolution(cbc);
  const bool has_solution = x != nullptr && !Cbc_isProvenInfeasible(cbc);
  out.proven_optimal = Cbc_isProvenOptimal(cbc) != 0;

  // The order: each rank's passes by the solver's start times (ties by the
  // order variables through the warm start's position are impossible here:
  // every pass has a duration > 0 or is ordered by a fixed pair).
  Program prog = warm.program;
  double bound = Cbc_getBestPossibleObjValue(cbc) * unit;
  if (has_solution && std::isfinite(x[col_c]) && x[col_c] * unit <= warm.sim.makespan_s * (1 + 1e-9)) {
    for (int s = 0; s < P; ++s) {
      std::vector<int> order(n);
      for (int li = 0; li < n; ++li) order[li] = li;
      auto start = [&](int li) {
        const int e = pass_index(s, li / 3, li % 3);
        return x[e] - dur(passes[e]);
      };
      auto before = [&](int la, int lb) {  // la runs before lb
        if (la == lb) return false;
        const int lo = std::min(la, lb), hi = std::max(la, lb);
        const int o = order_col[s][lo][hi];
        const bool lo_first = o == kBefore ? true : o == kAfter ? false : x[o] > 0.5;
        return la == lo ? lo_first : !lo_first;
      };
      std::sort(order.begin(), order.end(), [&](int a, int b) {
        const double sa = start(a), sb = start(b);
        if (std::abs(sa - sb) > 1e-7) return sa < sb;
        return before(a, b);
      });
      auto& list = prog.ranks[s];
      list.clear();
      for (int li : order) {
        const int kind = li % 3;
        list.push_back(MakeAction(s,
                                  kind == kF   ? ActionType::kF
                                  : kind == kI ? ActionType::kI
                                               : ActionType::kW,
                                  li / 3));
      }
    }
  }
  // The order's own makespan, run as soon as possible (<= the MILP's times).
  StatusOr<SimResult> sim = Simulate(prog, req.costs);
  if (!sim.ok()) return Status::Internal("optimal: the solver's order does not simulate: " + sim.status().message());
  bool fits = true;
  for (int r = 0; r < P; ++r)
    if (static_cast<double>(sim->per_rank[r].peak_memory_bytes - sim->per_rank[r].start_memory_bytes) >
        RankMemoryLimit(req, r) + 1e-9)
      fits = false;
  if (!fits || sim->makespan_s > warm.sim.makespan_s) {  // cannot happen for a sound model; keep the warm start
    prog = warm.program;
    sim = warm.sim;
  }
  out.program = prog;
  out.makespan_s = sim->makespan_s;
  out.objective_s = has_solution ? Cbc_getObjValue(cbc) * unit : warm.sim.makespan_s;
  if (!std::isfinite(bound)) bound = 0;
  bound = std::max(bound, lower * unit);
  if (out.proven_optimal) bound = std::max(bound, out.objective_s);
  out.bound_s = std::min(bound, out.makespan_s);
  out.gap = out.makespan_s > 0 ? std::max(0.0, (out.makespan_s - out.bound_s) / out.makespan_s) : 0.0;
  if (out.proven_optimal) {  // CBC's bound is the objective up to its tolerance
    out.bound_s = out.makespan_s;
    out.gap = 0;
  }
  return out;
}

}  // namespace pw
