// ZB-auto's second candidate generator: the ZB paper's per-microbatch round
// construction (see generators.h, ZeroBubbleRounds); zb_auto.cc's search runs
// it beside the list scheduler for one stage per rank in loop placement.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "schedules/generators/generators.h"

namespace pw {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The paper's per-microbatch construction (ZB §3.1, docs/ALGORITHMS.md §2
// "Heuristic"), written from that description, for one stage per rank (loop
// placement). Unlike the list scheduler in zb_auto.cc it fixes each stage's warm-up
// from the first gradient's arrival and then places passes round by round.
// Each stage keeps an end time (the heuristic's own clock): a pass starts at
// max(stage free, input arrival), the times Simulate() then gives the
// compute-only program.
//   1. Warm-up. Stage s runs k_s forwards back to back from its first one
//      (k_{P-1} = 1: the last stage's I0 follows its F0). For s = P-2 ... 0,
//      I0's input reaches stage s at a_s = end of I0 on s+1 + message, and
//      k_s is the largest count whose forwards end by a_s (flag `f_overrun`,
//      the paper's allow_bubble_before_first_b: whose forwards start before
//      a_s), within the memory limit, and at least min(m, k_{s+1} + 1): so
//      stage s+1's warm-up forwards never wait behind stage s's I0. With
//      m >= P this needs room for P activations on stage 0 (ZB-1p's limit);
//      for less memory only the list scheduler runs.
//   2. Rounds, until every I is placed. In each round every stage, from the
//      last to the first (an I needs the I of the stage above, placed
//      earlier in the round), places one F if its input is placed (stage
//      s-1 is ahead) and then one I if ready (flag `i_first`: the I first).
//      Flag `skip_f` (the paper's prioritize_b): a stage at least two
//      forwards ahead of the next one skips the round's F if going straight
//      to its I does not lift its bubble above the largest stage bubble so
//      far. Before every F and I, W's (FIFO) are placed by the paper's rules:
//      (a) while the pass would exceed the memory limit; (b) while a whole W
//      ends before the pass's input arrives; (c) flag `greedy_w` (the paper's
//      no_bubble_greedy): one more W if the idle gap left would lift this
//      stage's bubble (idle time since its first F) above the largest stage
//      bubble so far.
//   3. Tail. Each stage runs its remaining W's.
// W's are thus held back unless they fill a gap, which gives ZB-H2's
// parallelogram: the later stages run F-I pairs (the gradient returns at the
// pace of F + I, not of F + I + W) and their W's at the end, within the
// memory they have, and no stage idles more than stage 0 must before its I0
// when the limit caps its warm-up (ZB Appendix B). Cost: O(P·m) passes plus
// O(P) per round.

class RoundHeuristic {
 public:
  RoundHeuristic(const ScheduleRequest& req, const std::vector<double>& limits, ZeroBubbleRoundFlags flags)
      : c_(req.costs), limits_(limits), flags_(flags) {
    prog_ = MakeEmptyProgram(req, 1, Placement::kLoop);
    P_ = req.pp_size;
    m_ = req.num_microbatches;
    nf_.assign(P_, 0);
    ni_.assign(P_, 0);
    nw_.assign(P_, 0);
    mem_.assign(P_, 0);
    end_.assign(P_, 0.0);
    bubble_.assign(P_, 0.0);
    f_end_.assign(static_cast<size_t>(P_) * m_, 0.0);
    i_end_.assign(static_cast<size_t>(P_) * m_, 0.0);
  }

  StatusOr<Program> Run() {
    // 1. Warm-up counts. Stage s may hold at most cap_s activations, and
    //    k_s >= min(m, k_{s+1} + 1) must hold down the pipeline, so k_s <=
    //    top_s = min(cap_s, top_{s-1} - 1) (or m once top_{s-1} reaches m).
    std::vector<int> top(P_);
    for (int s = 0; s < P_; ++s) {
      top[s] = MaxActivations(s);
      if (s > 0) top[s] = std::min(top[s], top[s - 1] >= m_ ? m_ : top[s - 1] - 1);
      if (top[s] < 1) return Status::Infeasible("the warm-up needs more memory");
    }
    // Stage s's first top_s forwards back to back (stage s-1 runs at least
    // one more before its I0): fe[s][k] = end of F_k.
    std::vector<std::vector<double>> fe(P_);
    for (int s = 0; s < P_; ++s) {
      fe[s].resize(top[s]);
      for (int k = 0; k < top[s]; ++k) {
        double start = k > 0 ? fe[s][k - 1] : 0.0;
        if (s > 0) start = std::max(start, fe[s - 1][k] + Msg(s - 1, s, true));
        fe[s][k] = start + c_.stages[s].f;
      }
    }
    std::vector<int> warm(P_, 1);
    double i0_end = fe[P_ - 1][0] + c_.stages[P_ - 1].i;
    for (int s = P_ - 2; s >= 0; --s) {
      const double arrival = i0_end + Msg(s + 1, s, false);
      int k = std::min(m_, warm[s + 1] + 1);
      while (k < top[s] && (flags_.f_overrun ? fe[s][k - 1] < arrival : fe[s][k] <= arrival)) ++k;
      warm[s] = k;
      i0_end = std::max(fe[s][k - 1], arrival) + c_.stages[s].i;
    }
    for (int s = 0; s < P_; ++s)
      for (int k = 0; k < warm[s]; ++k) PW_RETURN_IF_ERROR(Place(s, kF));
    for (int s = P_ - 1; s >= 0; --s) PW_RETURN_IF_ERROR(PlaceWithW(s, kI));
    // 2. Rounds until every I is placed: stages from the last to the first,
    //    so that the I above is placed (and timed) before this stage's I.
    for (bool done = false; !done;) {
      done = true;
      bool progress = false;
      for (int s = P_ - 1; s >= 0; --s) {
        bool do_f = nf_[s] < m_ && (s == 0 || nf_[s] < nf_[s - 1]);  // input placed
        if (do_f && flags_.skip_f && s + 1 < P_ && nf_[s] - nf_[s + 1] >= 2 && IReady(s) &&
            bubble_[s] + std::max(0.0, InputArrival(s, kI) - end_[s]) <= max_bubble_)
          do_f = false;
        bool placed_i = false;
        if (flags_.i_first && IReady(s)) {
          PW_RETURN_IF_ERROR(PlaceWithW(s, kI));
          placed_i = progress = true;
        }
        if (do_f) {
          PW_RETURN_IF_ERROR(PlaceWithW(s, kF));
          progress = true;
        }
        if (!placed_i && IReady(s)) {  // after the F: the last stage's I needs it
          PW_RETURN_IF_ERROR(PlaceWithW(s, kI));
          progress = true;
        }
        if (ni_[s] < m_) done = false;
      }
      if (!done && !progress) return Status::Internal("zero-bubble rounds made no progress");
    }
    // 3. Tail.
    for (int s = 0; s < P_; ++s)
      while (nw_[s] < ni_[s]) PW_RETURN_IF_ERROR(Place(s, kW));
    return std::move(prog_);
  }

 private:
  enum Kind { kF, kI, kW };

  size_t Key(int s, int mb) const { return static_cast<size_t>(s) * m_ + mb; }
  double Msg(int from, int to, bool fwd) const {
    const StageMemory& sm = c_.memory[from];
    return c_.comm.MessageSeconds(fwd ? sm.send_forward : sm.send_backward);
  }
  int MaxActivations(int s) const {
    const int64_t act = c_.memory[s].activation;
    if (act <= 0) return m_;
    return static_cast<int>(std::min<double>(m_, std::floor(limits_[s] / static_cast<double>(act))));
  }
  // When the input of stage s's next pass of `kind` arrives (already placed).
  double InputArrival(int s, Kind kind) const {
    if (kind == kF) return s == 0 ? 0.0 : f_end_[Key(s - 1, nf_[s])] + Msg(s - 1, s, true);
    if (kind == kI) return s == P_ - 1 ? f_end_[Key(s, ni_[s])] : i_end_[Key(s + 1, ni_[s])] + Msg(s + 1, s, false);
    return 0.0;
  }
  // The next I of stage s has its forward and the gradient from above placed.
  bool IReady(int s) const { return ni_[s] < nf_[s] && (s == P_ - 1 || ni_[s] < ni_[s + 1]); }
  int64_t Delta(int s, Kind kind) const {
    const StageMemory& sm = c_.memory[s];
    return kind == kF ? sm.activation : kind == kI ? sm.wstash - sm.activation : -sm.wstash;
  }

  Status Place(int s, Kind kind) {
    const StageCost& sc = c_.stages[s];
    double start = std::max(end_[s], InputArrival(s, kind));
    if (nf_[s] > 0) {
      bubble_[s] += start - end_[s];
      max_bubble_ = std::max(max_bubble_, bubble_[s]);
    }
    int mb = 0;
    ActionType type = ActionType::kF;
    if (kind == kF) {
      mb = nf_[s]++;
      end_[s] = start + sc.f;
      f_end_[Key(s, mb)] = end_[s];
    } else if (kind == kI) {
      mb = ni_[s]++;
      type = ActionType::kI;
      end_[s] = start + sc.i;
      i_end_[Key(s, mb)] = end_[s];
    } else {
      mb = nw_[s]++;
      type = ActionType::kW;
      end_[s] = start + sc.w;
    }
    mem_[s] += Delta(s, kind);
    if (static_cast<double>(mem_[s]) > limits_[s]) return Status::Infeasible("memory limit exceeded");
    prog_.ranks[s].push_back(MakeAction(s, type, mb));
    return Status::Ok();
  }

  // Rules (a), (b), (c), then the pass itself.
  Status PlaceWithW(int s, Kind kind) {
    const double w = c_.stages[s].w;
    while (nw_[s] < ni_[s] && static_cast<double>(mem_[s] + Delta(s, kind)) > limits_[s])
      PW_RETURN_IF_ERROR(Place(s, kW));
    const double arrival = InputArrival(s, kind);
    while (nw_[s] < ni_[s] && end_[s] + w <= arrival) PW_RETURN_IF_ERROR(Place(s, kW));
    if (flags_.greedy_w && nw_[s] < ni_[s] && end_[s] < arrival && bubble_[s] + (arrival - end_[s]) > max_bubble_)
      PW_RETURN_IF_ERROR(Place(s, kW));
    return Place(s, kind);
  }

  const StageCosts& c_;
  const std::vector<double>& limits_;  // [stage] = [rank] (one stage per rank) -> activation limit
  const ZeroBubbleRoundFlags flags_;
  Program prog_;
  int P_ = 0, m_ = 0;
  std::vector<int> nf_, ni_, nw_;      // [stage] -> passes placed
  std::vector<int64_t> mem_;           // [stage] -> activation + wstash bytes held
  std::vector<double> end_, bubble_;   // [stage] -> end of last pass, idle since first F
  double max_bubble_ = 0;              // max over stages of bubble_
  std::vector<double> f_end_, i_end_;  // [stage * m + mb] -> end time
};

}  // namespace

StatusOr<Program> ZeroBubbleRounds(const ScheduleRequest& req, const std::vector<double>& memory_limits,
                                   ZeroBubbleRoundFlags flags) {
  return RoundHeuristic(req, memory_limits, flags).Run();
}

}  // namespace pw
