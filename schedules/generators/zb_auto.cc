// ZB-auto: the memory-limited automatic zero-bubble schedule (Qi et al. 2024,
// "Zero Bubble Pipeline Parallelism", §3.1 heuristic; docs/ALGORITHMS.md §2). One
// stage per rank, loop placement, backward split into I and W. This file also
// holds the greedy engine that zb_v.cc runs with V placement (ZeroBubbleGreedy).
//
// The engine is a list scheduler with its own clock (the paper's heuristic
// keeps times too): ranks are visited in order of their decision time (ties:
// lowest rank), and a rank that is free at time t picks, among the passes
// whose inputs have arrived by t:
//   1. an I (input gradient; it unblocks the rank above and frees
//      activation memory; the later stage first), unless flag `f_before_i`
//      lets a ready F go first;
//   2. else an F (the later stage first: ZB-V's "chunk 1 first") if memory
//      allows. Warm-up is not counted: a rank runs forwards while their
//      inputs are there and the memory limit allows, which is exactly the
//      paper's warm-up rule "add F's while memory stays <= M_limit and the
//      stage would otherwise idle before I0 arrives"; flag `f_overrun` = false
//      refuses an F that would still be running when a known I arrives
//      (the paper's allow_bubble_before_first_b);
//   3. else a W (FIFO): always when memory forbids the F or I that is ready
//      (paper step 2a, "issue W's while mem + dM > M_limit"), and otherwise
//      to fill an idle gap: only when it fits before the earliest time an
//      input could arrive (step 2b), or, with flag `greedy_w`, whenever the
//      rank would idle (step 2c, no_bubble_greedy);
//   4. else it waits until the earliest time an input can arrive (a known
//      arrival, or the producer rank's clock + its pass + the message).
// The pattern settles into 1F-1I-1W by itself; the tail flushes the W's.
// Memory follows docs/PLAN_FORMAT.md rule 7 (+activation at F, -activation +
// wstash at I, -wstash at W), excluding static bytes. With several stages
// per rank (ZB-V), a forward of the rank's first stage also keeps room for
// the same microbatch's forward on the rank's later stages (flag
// `reserve_all`: room for every microbatch in flight, else for one), so the
// rank can always make progress towards the returning gradient.
//
// A fourth switch, `cap_slack`, optionally caps the microbatches between F
// and I on stage s at S - s - slack (slack 0: 1F1B's warm-up, so the rest of
// the memory goes to held-back W's as in ZB-H1; without it a middle rank fills
// its memory with activations and has no W's left to fill later gaps).
//
// A second generator, ZeroBubbleRounds (zb_rounds.cc), follows the paper's own
// construction more closely (warm-up counted from I0's arrival, then one F
// and one I per stage and microbatch, W's held back unless they fill a gap);
// it gives ZB-H2's parallelogram tail that the list scheduler misses, and
// with it the paper's ZB-2p bubbles (Table 5; bench/results/zb_paper.md).
//
// Search (paper step 4): all flag combinations of the list scheduler (2^3
// paper-like flags x cap in {off, slack 0, slack 1} x, for several stages
// per rank, the two reserve rules) and, for one stage per rank, the 2^4
// flag sets of ZeroBubbleRounds; each candidate is evaluated with Simulate()
// on the compute-only program with the request's costs and must fit the
// memory limit; keep the smallest steady_step_s (the paper's cost: max over
// ranks of last end - first start), then the smallest makespan, then the
// first candidate in that order. If every run gets stuck under the limit
// (forwards admitted until no I has room for its weight stash, which happens
// when the stash is larger than the activation, e.g. with full recompute),
// the list scheduler's grid runs again keeping room for one I's growth
// (GreedyFlags::keep_i_room); with one microbatch in flight fitting every
// rank, some run then finishes.
//
// Cost: each list-scheduler run notes which single-flag changes never
// altered one of its decisions (FlagEcho); a later flag set that differs
// from an earlier run only in such a flag would repeat that run exactly,
// so it is skipped (unless that run's outcome would now win, which only
// the 1e-9 tolerance of the comparison allows; then it runs). The chosen
// program is the one the full grid picks (tests/schedules/
// generation_digest_test.cc); Interleaved ZB at P = 32, v = 2, m = 256 runs
// 24 of its 48 flag sets.
//
// Inputs beyond the paper's code: per-stage F/I/W times (stages may differ),
// per-stage message times (latency + send bytes / bandwidth, zero between
// stages on one rank), per-stage activation/wstash bytes.
// Memory limit: the request's per rank (RankMemoryLimit); if it sets none, for zb-auto:
// P x the largest stage activation, i.e. 1F1B's in-flight memory (ZB-1p).
// With unit costs this gives ZB-H1's makespan 3m + P - 1 (m >= P); with
// 2P x activation and m >= 2P it gives ZB-H2's steady step 3m.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "schedules/generators/generators.h"
#include "schedules/simulate.h"

namespace pw {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The heuristic's switches (paper §3.1 and ZB-V's fill flags).
struct GreedyFlags {
  bool f_overrun = true;    // start an F even if a known I arrives before it ends
  bool f_before_i = false;  // a ready F goes before a ready I
  bool greedy_w = true;     // fill every idle gap with a W, even a short one
  bool reserve_all = true;  // multi-stage ranks: keep room for every in-flight microbatch's later forwards
  // If >= 0: at most max(1, S - s - cap_slack) microbatches between F and I
  // on stage s (1F1B's in-flight count when 0), leaving the rest of the
  // memory to held-back W's as ZB-H1 does. < 0: memory is the only limit.
  int cap_slack = -1;
  // A new microbatch's first F, while others are in flight on the rank, also
  // keeps room for the largest growth of one I (wstash - activation of the
  // rank's stages): with a weight stash larger than the activation (full
  // recompute) the greedy can otherwise admit forwards until no I fits and
  // no W is pending (stuck). Tried only when no order is found without it.
  bool keep_i_room = false;
};

// Which single-flag changes would have left a whole greedy run unchanged:
// every branch that reads a flag is also evaluated with that one flag
// changed (the others as they are), and an entry turns false the first time
// the outcome differs. A run whose entry stayed true makes the same
// decision at every step with the flag changed, so that run's program (or
// its failure) is exactly this one's: the search skips it.
struct FlagEcho {
  bool f_overrun = true, f_before_i = true, greedy_w = true, reserve_all = true, keep_i_room = true;
  bool cap_slack[3] = {true, true, true};  // [cap_slack + 1] for the values -1, 0, 1
};

// One greedy run. Times in seconds, memory in costs.memory units.
class Greedy {
 public:
  Greedy(const ScheduleRequest& req, int v, Placement placement, const std::vector<double>& limits, GreedyFlags flags)
      : c_(req.costs), limits_(limits), flags_(flags) {
    prog_ = MakeEmptyProgram(req, v, placement);
    P_ = req.pp_size;
    m_ = req.num_microbatches;
    S_ = prog_.num_stages;
    stages_of_.resize(P_);
    for (int s = 0; s < S_; ++s) stages_of_[prog_.stage_to_rank[s]].push_back(s);
    later_act_.assign(S_, 0);
    first_on_rank_.assign(S_, false);
    i_room_.assign(P_, 0);
    for (int r = 0; r < P_; ++r) {
      const auto& st = stages_of_[r];
      for (size_t j = 0; j < st.size(); ++j) {
        first_on_rank_[st[j]] = (j == 0);
        for (size_t k = j + 1; k < st.size(); ++k) later_act_[st[j]] += c_.memory[st[k]].activation;
        i_room_[r] = std::max(i_room_[r], c_.memory[st[j]].wstash - c_.memory[st[j]].activation);
      }
    }
    next_f_.assign(S_, 0);
    next_i_.assign(S_, 0);
    in_flight_.assign(S_, 0);
    open_.assign(P_, 0);
    f_end_.assign(static_cast<size_t>(S_) * m_, -1.0);
    i_end_.assign(static_cast<size_t>(S_) * m_, -1.0);
    pending_w_.resize(P_);
    mem_.assign(P_, 0);
    reserve_.assign(P_, 0);
    free_.assign(P_, 0.0);
    dec_.assign(P_, 0.0);
    left_.assign(P_, 0);
    for (int r = 0; r < P_; ++r) {
      left_[r] = 3 * m_ * static_cast<int>(stages_of_[r].size());
      prog_.ranks[r].reserve(left_[r]);
    }
    leaves_ = 1;
    while (leaves_ < P_) leaves_ *= 2;
    tree_.assign(2 * leaves_, -1);
    for (int r = 0; r < P_; ++r) Touch(r);
    // A tiny positive duration, so that waiting always moves the clock.
    double max_cost = 0;
    for (const StageCost& sc : c_.stages) max_cost = std::max({max_cost, sc.f, sc.i, sc.w});
    eps_ = 1e-9 * (max_cost > 0 ? max_cost : 1.0);
  }

  // Which single-flag changes would have left this run unchanged (FlagEcho);
  // complete once Run() has returned.
  const FlagEcho& echo() const { return echo_; }

  // Returns the compute-only program, or Infeasible if the ranks get stuck
  // under the memory limit.
  StatusOr<Program> Run() {
    const long long max_steps = 200LL * (3LL * S_ * m_ + P_) + 1000;
    // Stuck under the memory limit: ranks that wait on each other's blocked
    // passes only move their clocks. Waits between two placed passes are
    // few when the ranks can progress (at most ~1.3 P in bench/zb_paper_bench,
    // P <= 32, and in the tests), so this many in a row means no progress.
    const long long max_waits = 64LL * P_ + 1000;
    long long waits = 0;
    for (long long step = 0; step < max_steps; ++step) {
      const int r = tree_[1];  // the rank to decide next (Earlier)
      if (r < 0 || left_[r] <= 0) return std::move(prog_);
      if (dec_[r] == kInf || waits > max_waits)
        return Status::Infeasible("ranks cannot progress under the memory limit");
      waits = Decide(r) ? 0 : waits + 1;
    }
    return Status::Internal("zero-bubble greedy did not converge");
  }

 private:
  enum Kind { kF, kI, kW };
  struct Candidate {
    Kind kind;
    int stage;
    int mb;
    double ready;  // known arrival of all inputs, or kInf if unknown
    double lower;  // earliest possible arrival (== ready when known)
  };

  size_t Key(int s, int mb) const { return static_cast<size_t>(s) * m_ + mb; }
  double Msg(int from_stage, int to_stage, bool fwd) const {
    if (prog_.stage_to_rank[from_stage] == prog_.stage_to_rank[to_stage]) return 0.0;
    const StageMemory& sm = c_.memory[from_stage];
    return c_.comm.MessageSeconds(fwd ? sm.send_forward : sm.send_backward);
  }

  // Input arrival of the producer pass of `stage` on another rank (or kInf
  // if it runs on this rank and has not run: the rank must run it first).
  void Arrival(int r, int producer, double produced, double pass_cost, int consumer, bool fwd, double* ready,
               double* lower) const {
    double msg = Msg(producer, consumer, fwd);
    if (produced >= 0) {
      *ready = *lower = produced + msg;
      return;
    }
    *ready = kInf;
    int pr = prog_.stage_to_rank[producer];
    *lower = pr == r ? kInf : dec_[pr] + std::max(pass_cost, eps_) + msg;
  }

  // Next F and I of every stage of rank r, later stages first, into `out`
  // (cleared; a buffer kept across steps, so the hot loop does not allocate).
  void Candidates(int r, std::vector<Candidate>& out) const {
    // Each entry is written field by field in place: a Candidate built on
    // the stack and copied in is read back before its stores have retired
    // (a store-forwarding stall that cost a third of the greedy's time).
    out.clear();
    const auto& st = stages_of_[r];
    for (int j = static_cast<int>(st.size()) - 1; j >= 0; --j) {
      int s = st[j];
      int mb = next_i_[s];
      if (mb < m_ && f_end_[Key(s, mb)] >= 0) {
        Candidate& c = out.emplace_back();
        c.kind = kI;
        c.stage = s;
        c.mb = mb;
        c.ready = c.lower = f_end_[Key(s, mb)];
        if (s + 1 < S_) {
          double ready, lower;
          Arrival(r, s + 1, i_end_[Key(s + 1, mb)], c_.stages[s + 1].i, s, false, &ready, &lower);
          c.ready = std::max(c.ready, ready);
          c.lower = std::max(c.lower, lower);
        }
      }
    }
    for (int j = static_cast<int>(st.size()) - 1; j >= 0; --j) {
      int s = st[j];
      int mb = next_f_[s];
      if (mb >= m_) continue;
      Candidate& c = out.emplace_back();
      c.kind = kF;
      c.stage = s;
      c.mb = mb;
      c.ready = c.lower = 0.0;
      if (s > 0) Arrival(r, s - 1, f_end_[Key(s - 1, mb)], c_.stages[s - 1].f, s, true, &c.ready, &c.lower);
    }
  }

  // Whether memory allows candidate c on rank r under the rules
  // `reserve_all` and `keep_i_room` (GreedyFlags).
  bool MemoryAllowsWith(int r, const Candidate& c, bool reserve_all, bool keep_i_room) const {
    const StageMemory& sm = c_.memory[c.stage];
    const double limit = limits_[r];
    if (c.kind == kF) {
      int64_t after = mem_[r] + sm.activation;
      if (first_on_rank_[c.stage]) {  // a new microbatch: keep room for its later forwards too
        const int64_t i_room = keep_i_room && open_[r] > 0 ? i_room_[r] : 0;
        return static_cast<double>(after + later_act_[c.stage] + (reserve_all ? reserve_[r] : 0) + i_room) <= limit;
      }
      // A later stage: its room is in the reserve (reserve_all) or must be free now.
      return static_cast<double>(after + (reserve_all ? reserve_[r] - sm.activation : 0)) <= limit;
    }
    // An I turns the activation into the smaller or larger wstash; with W's
    // pending we free memory first, otherwise it may use the reserve.
    int64_t after = mem_[r] - sm.activation + sm.wstash;
    if (pending_w_[r].empty()) return static_cast<double>(after) <= limit;
    return static_cast<double>(after + (reserve_all ? reserve_[r] : 0)) <= limit;
  }

  // MemoryAllowsWith under the run's flags, noting in echo_ whether either
  // memory flag changed would have answered differently.
  bool MemoryAllows(int r, const Candidate& c) {
    const bool allows = MemoryAllowsWith(r, c, flags_.reserve_all, flags_.keep_i_room);
    if (echo_.reserve_all && MemoryAllowsWith(r, c, !flags_.reserve_all, flags_.keep_i_room) != allows)
      echo_.reserve_all = false;
    if (echo_.keep_i_room && MemoryAllowsWith(r, c, flags_.reserve_all, !flags_.keep_i_room) != allows)
      echo_.keep_i_room = false;
    return allows;
  }

  // The 1F1B-like cap (GreedyFlags::cap_slack) holds back a ready F of
  // `stage`; notes in echo_ which other cap values (-1, 0, 1) would differ.
  bool Capped(int stage) {
    auto capped = [&](int slack) { return slack >= 0 && in_flight_[stage] >= std::max(1, S_ - stage - slack); };
    const bool held = capped(flags_.cap_slack);
    for (int slack = -1; slack <= 1; ++slack)
      if (capped(slack) != held) echo_.cap_slack[slack + 1] = false;
    return held;
  }

  // Places rank r's next pass (true) or moves its clock to when it may (false).
  bool Decide(int r) {
    const double t = dec_[r];
    std::vector<Candidate>& cands = cands_;
    Candidates(r, cands);
    const Candidate* pick_i = nullptr;
    const Candidate* pick_f = nullptr;
    bool memory_blocked = false;
    double next_event = kInf;    // earliest time a not-yet-ready input can arrive
    double next_known_i = kInf;  // earliest known arrival of a not-yet-ready I
    for (const Candidate& c : cands) {
      if (c.ready <= t) {
        if (c.kind == kF && Capped(c.stage)) continue;  // waits for an I, like 1F1B; an idle gap may take a W
        if (!MemoryAllows(r, c)) {
          memory_blocked = true;
          continue;
        }
        if (c.kind == kI && !pick_i) pick_i = &c;
        if (c.kind == kF && !pick_f) pick_f = &c;
      } else {
        next_event = std::min(next_event, c.lower);
        if (c.kind == kI) next_known_i = std::min(next_known_i, c.ready);
      }
    }
    // (FlagEcho: f_overrun decides only if an F is ready and would overrun a
    // known I; f_before_i only if both an F and an I are picked.)
    const bool overruns = pick_f && next_known_i < t + c_.stages[pick_f->stage].f;
    if (overruns) echo_.f_overrun = false;
    if (overruns && !flags_.f_overrun) pick_f = nullptr;
    const Candidate* pick = pick_i;
    if (pick_f && pick_i) echo_.f_before_i = false;
    if (pick_f && (!pick_i || flags_.f_before_i)) pick = pick_f;
    if (pick) {
      Schedule(r, pick->kind, pick->stage, pick->mb, std::max(free_[r], pick->ready));
      return true;
    }
    auto& wq = pending_w_[r];
    if (!wq.empty()) {
      int s = wq.front().first;
      bool fits = t + c_.stages[s].w <= next_event;
      const bool must = memory_blocked || fits || next_event == kInf;
      if (!must) echo_.greedy_w = false;  // the W is placed only because of greedy_w
      if (must || flags_.greedy_w) {
        int mb = wq.front().second;
        wq.pop_front();
        Schedule(r, kW, s, mb, std::max(free_[r], t));
        return true;
      }
    }
    // Wait. If nothing can arrive (next_event == inf) the rank is blocked
    // until another rank schedules a pass.
    SetDec(r, next_event > t ? next_event : t + eps_);
    return false;
  }

  // Whether rank a decides before rank b: ranks with passes left first, then
  // the earlier decision clock, then the lower rank (-1: none).
  bool Earlier(int a, int b) const {
    if (a < 0 || left_[a] <= 0) return false;
    if (b < 0 || left_[b] <= 0) return true;
    return dec_[a] < dec_[b] || (dec_[a] == dec_[b] && a < b);
  }
  // Re-ranks rank q in the tournament tree after its clock or passes left
  // changed (O(log P)); tree_[1] is the rank Run() decides next.
  void Touch(int q) {
    int node = leaves_ + q;
    tree_[node] = q;
    for (node /= 2; node >= 1; node /= 2) {
      const int a = tree_[2 * node], b = tree_[2 * node + 1];
      tree_[node] = Earlier(b, a) ? b : a;
    }
  }
  // Sets rank q's decision clock, counting the blocked ranks (clock kInf).
  void SetDec(int q, double t) {
    blocked_ += (t == kInf) - (dec_[q] == kInf);
    dec_[q] = t;
    Touch(q);
  }

  void Schedule(int r, Kind kind, int s, int mb, double start) {
    const StageCost& sc = c_.stages[s];
    const StageMemory& sm = c_.memory[s];
    double end = start;
    ActionType type = ActionType::kF;
    if (kind == kF) {
      end += sc.f;
      f_end_[Key(s, mb)] = end;
      ++next_f_[s];
      ++in_flight_[s];
      if (first_on_rank_[s]) ++open_[r];
      mem_[r] += sm.activation;
      reserve_[r] += first_on_rank_[s] ? later_act_[s] : -sm.activation;
    } else if (kind == kI) {
      type = ActionType::kI;
      end += sc.i;
      i_end_[Key(s, mb)] = end;
      ++next_i_[s];
      --in_flight_[s];
      if (first_on_rank_[s]) --open_[r];  // the rank's last I of the microbatch
      mem_[r] += sm.wstash - sm.activation;
      pending_w_[r].emplace_back(s, mb);
    } else {
      type = ActionType::kW;
      end += sc.w;
      mem_[r] -= sm.wstash;
    }
    prog_.ranks[r].push_back(MakeAction(s, type, mb));
    --left_[r];
    const double now = dec_[r];
    free_[r] = end;
    SetDec(r, end);
    // Ranks that were blocked re-decide from now on.
    if (blocked_ > 0)
      for (int q = 0; q < P_; ++q)
        if (dec_[q] == kInf) SetDec(q, std::max(free_[q], now));
  }

  const StageCosts& c_;
  const std::vector<double>& limits_;  // [rank] -> activation limit
  const GreedyFlags flags_;
  Program prog_;
  int P_ = 0, m_ = 0, S_ = 0;
  double eps_ = 0;
  std::vector<std::vector<int>> stages_of_;  // [rank] -> its stages, ascending
  std::vector<int64_t> later_act_;           // [stage] -> activations of the rank's later stages
  std::vector<bool> first_on_rank_;          // [stage] -> lowest stage of its rank
  std::vector<int> next_f_, next_i_;         // [stage] -> next microbatch
  std::vector<int> in_flight_;               // [stage] -> F's done - I's done
  std::vector<int> open_;                    // [rank] -> microbatches with F done on the rank and I not
  std::vector<int64_t> i_room_;              // [rank] -> max(0, max over its stages of wstash - activation)
  std::vector<double> f_end_, i_end_;        // [stage * m + mb] -> end time, < 0 if not run
  std::vector<std::deque<std::pair<int, int>>> pending_w_;  // [rank] -> (stage, mb) FIFO
  std::vector<int64_t> mem_, reserve_;                      // [rank] -> bytes in use, bytes kept for later forwards
  std::vector<double> free_, dec_;                          // [rank] -> end of last pass, decision clock
  std::vector<int> left_;                                   // [rank] -> passes still to place
  int leaves_ = 1;                                          // tournament tree: leaves (a power of 2 >= P)
  std::vector<int> tree_;                                   // [node] -> the earliest rank below it (Earlier), -1 none
  int blocked_ = 0;                                         // ranks whose decision clock is kInf
  std::vector<Candidate> cands_;                            // Decide's buffer: the deciding rank's next F's and I's
  FlagEcho echo_;                                           // single-flag changes that have not mattered so far
};

std::string Bytes(double b) { return std::to_string(static_cast<int64_t>(b)); }

}  // namespace

StatusOr<Program> ZeroBubbleGreedy(const ScheduleRequest& req, int virtual_stages, Placement placement,
                                   const std::vector<double>& memory_limits, const std::string& name) {
  // The least memory of any order: one microbatch at a time, all of a rank's
  // forwards kept, then each I followed by its W (later stages first).
  const Program one = OneMicrobatchProgram(req, virtual_stages, placement, true);
  PW_ASSIGN_OR_RETURN(SimResult one_sim, Simulate(one, req.costs));
  std::vector<int64_t> need(req.pp_size, 0);
  for (int r = 0; r < req.pp_size; ++r) {
    need[r] = one_sim.per_rank[r].peak_memory_bytes - one_sim.per_rank[r].start_memory_bytes;
    if (static_cast<double>(need[r]) > memory_limits[r])
      return Status::Infeasible(name + " needs " + std::to_string(need[r]) + " bytes of activation memory on rank " +
                                std::to_string(r) + " for one microbatch in flight, over " + RankLimitText(req, r) +
                                "; raise --memory-limit");
  }
  std::optional<Program> best;
  double best_steady = kInf, best_makespan = kInf;
  // What consider() learnt of a candidate: whether it finished within the
  // limits, and its score (seconds).
  struct Outcome {
    bool fits = false;
    double steady = kInf, makespan = kInf;
  };
  // Whether a candidate with outcome o replaces the best so far: smaller
  // steady step, or the same within 1e-9 relative and a smaller makespan
  // (ties keep the earlier one).
  auto beats_best = [&](const Outcome& o) {
    const double tol = 1e-9 * std::max(1.0, o.steady);
    return o.fits &&
           (o.steady < best_steady - tol || (o.steady <= best_steady + tol && o.makespan < best_makespan - tol));
  };
  // Simulates a candidate and keeps it if it fits and beats the best so far.
  auto consider = [&](StatusOr<Program> prog, Outcome* outcome) -> Status {
    *outcome = Outcome{};
    if (!prog.ok()) return Status::Ok();  // stuck under the limit: not a candidate
    auto sim = Simulate(*prog, req.costs);
    if (!sim.ok()) return Status::Internal(name + " greedy produced an invalid order: " + sim.status().message());
    for (int r = 0; r < req.pp_size; ++r) {
      const RankResult& rr = sim->per_rank[r];
      if (static_cast<double>(rr.peak_memory_bytes - rr.start_memory_bytes) > memory_limits[r]) return Status::Ok();
    }
    *outcome = Outcome{true, sim->steady_step_s, sim->makespan_s};
    if (beats_best(*outcome)) {
      best = std::move(*prog);
      best_steady = sim->steady_step_s;
      best_makespan = sim->makespan_s;
    }
    return Status::Ok();
  };
  // The list scheduler's runs so far: flags, FlagEcho and outcome.
  struct Ran {
    GreedyFlags flags;
    FlagEcho echo;
    Outcome outcome;
  };
  std::vector<Ran> ran;
  // A run whose flags differ from `flags` in exactly one flag that never
  // mattered to it (FlagEcho): the run of `flags` would repeat it exactly.
  auto same_run = [&](const GreedyFlags& f) -> const Ran* {
    for (const Ran& a : ran) {
      const GreedyFlags& g = a.flags;
      const int differ = (g.f_overrun != f.f_overrun) + (g.f_before_i != f.f_before_i) + (g.greedy_w != f.greedy_w) +
                         (g.reserve_all != f.reserve_all) + (g.keep_i_room != f.keep_i_room) +
                         (g.cap_slack != f.cap_slack);
      if (differ != 1) continue;
      const FlagEcho& e = a.echo;
      if ((g.f_overrun != f.f_overrun && e.f_overrun) || (g.f_before_i != f.f_before_i && e.f_before_i) ||
          (g.greedy_w != f.greedy_w && e.greedy_w) || (g.reserve_all != f.reserve_all && e.reserve_all) ||
          (g.keep_i_room != f.keep_i_room && e.keep_i_room) ||
          (g.cap_slack != f.cap_slack && f.cap_slack >= -1 && f.cap_slack <= 1 && e.cap_slack[f.cap_slack + 1]))
        return &a;
    }
    return nullptr;
  };
  const int reserve_modes = virtual_stages > 1 ? 2 : 1;
  auto greedy_grid = [&](bool keep_i_room) -> Status {
    for (int mode = 0; mode < reserve_modes * 3; ++mode) {
      for (int bits = 0; bits < 8; ++bits) {
        GreedyFlags flags;
        flags.cap_slack = mode / reserve_modes - 1;  // -1 (no cap), 0, 1
        flags.f_overrun = !(bits & 1);
        flags.f_before_i = bits & 2;
        flags.greedy_w = !(bits & 4);
        flags.reserve_all = mode % reserve_modes == 1;
        flags.keep_i_room = keep_i_room;
        // A repeat of an earlier run changes nothing unless its outcome
        // would now beat the best (possible only through the tolerance of
        // beats_best); then it runs like any other.
        const Ran* same = same_run(flags);
        if (same && !beats_best(same->outcome)) continue;
        Greedy greedy(req, virtual_stages, placement, memory_limits, flags);
        StatusOr<Program> prog = greedy.Run();
        Ran run{flags, greedy.echo(), {}};
        PW_RETURN_IF_ERROR(consider(std::move(prog), &run.outcome));
        ran.push_back(run);
      }
    }
    return Status::Ok();
  };
  PW_RETURN_IF_ERROR(greedy_grid(false));
  if (virtual_stages == 1 && placement == Placement::kLoop) {
    for (int bits = 0; bits < 16; ++bits) {
      ZeroBubbleRoundFlags flags;
      flags.f_overrun = bits & 1;
      flags.i_first = bits & 2;
      flags.skip_f = bits & 4;
      flags.greedy_w = !(bits & 8);
      Outcome outcome;
      PW_RETURN_IF_ERROR(consider(ZeroBubbleRounds(req, memory_limits, flags), &outcome));
    }
  }
  // Every flag set stuck: the grid again, keeping room for an I's stash.
  if (!best) PW_RETURN_IF_ERROR(greedy_grid(true));
  if (!best) {
    const bool uniform = req.rank_memory_limits.empty();
    return Status::Infeasible(name + ": no order fits " +
                              (uniform ? "--memory-limit " + Bytes(memory_limits[0]) + " bytes per rank"
                                       : std::string("the activation memory --memory-limit leaves each rank")) +
                              "; raise --memory-limit (one microbatch in flight needs " +
                              std::to_string(*std::max_element(need.begin(), need.end())) + " bytes on some rank)");
  }
  return std::move(*best);
}

// The activation limit of each rank: the request's, else `fallback` (the
// family's default) on every rank.
bool FitsMemoryLimits(const SimResult& sim, const std::vector<double>& limits) {
  for (size_t r = 0; r < sim.per_rank.size(); ++r) {
    const RankResult& rr = sim.per_rank[r];
    if (static_cast<double>(rr.peak_memory_bytes - rr.start_memory_bytes) > limits[r]) return false;
  }
  return true;
}

std::vector<double> RankLimits(const ScheduleRequest& req, double fallback) {
  std::vector<double> limits(req.pp_size, fallback);
  if (HasMemoryLimit(req))
    for (int r = 0; r < req.pp_size; ++r) limits[r] = RankMemoryLimit(req, r);
  return limits;
}

StatusOr<Program> GenerateZBAuto(const ScheduleRequest& req) {
  int64_t max_act = 0;
  for (const StageMemory& sm : req.costs.memory) max_act = std::max(max_act, sm.activation);
  const double fallback = static_cast<double>(req.pp_size) * static_cast<double>(max_act);
  return ZeroBubbleGreedy(req, 1, Placement::kLoop, RankLimits(req, fallback), "ZB-auto");
}

}  // namespace pw
