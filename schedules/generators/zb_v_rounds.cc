// ZB-V's memory-aware round construction as the authors build it
// (Qi et al. 2024, "Zero Bubble Pipeline Parallelism" §6; their
// scheduler/zbv.py in sail-sg/zero-bubble-pipeline-parallelism,
// try_v_schedule; docs/ALGORITHMS.md "ZB-V"). One of ZB-V's candidates
// (zb_v.cc); written here from the steps:
//
// 1. Warm-up. Every rank runs its chunk-0 F of microbatch 0. Then from the
//    last rank back to rank 0: rank i runs chunk-0 F's on ranks 0..i while
//    its memory keeps room for 2 + 2i more chunk activations and they end
//    before rank i + 1's chunk-1 F of microbatch 0 arrives, then its own
//    chunk-1 F. Then ranks i..P-1 alternate chunk-0 / chunk-1 F's until
//    each rank has run as many F's as the rank before it (and more chunk-1
//    F's than it, while any are left).
// 2. 2m rounds. Each round: ranks whose next I would pass the memory limit
//    run W's first; then one I per rank (chunk 1's from the last rank up,
//    before chunk 0's), then one F per rank (chunk 1 when its input is
//    there). Before each I or F a rank runs pending W's (FIFO) while they
//    fit in the wait for the input, and one more when the wait is longer
//    than the worst rank's bubble so far allows (`fill_i` for chunk-0 I's,
//    `fill_f` for F's).
// 3. The rest of the W's. The bubbles of a run (idle time after the rank's
//    first F) are then "approved": the construction is re-run with them as
//    a target while the worst bubble keeps shrinking.
// The four (fill_i, fill_f) runs are candidates. Times here are the
// construction's own estimate (stage costs, a latency per message between
// ranks); zb_v.cc times every candidate with Simulate().
#include <algorithm>
#include <array>
#include <deque>

#include "schedules/generators/generators.h"

namespace pw {

namespace {

class VRounds {
 public:
  VRounds(const ScheduleRequest& req, const std::vector<double>& limits, bool fill_i, bool fill_f)
      : req_(req), P_(req.pp_size), m_(req.num_microbatches), limits_(limits), fill_i_(fill_i), fill_f_(fill_f) {}

  // Runs the construction; false if a pass would pass the memory limit.
  bool Run(const std::vector<double>* approved);
  const Program& program() const { return prog_; }
  const std::vector<double>& bubble() const { return bubble_; }
  double WorstBubble() const { return *std::max_element(bubble_.begin(), bubble_.end()); }

 private:
  // kind = cat * 2 + chunk: cat 0 F, 1 I, 2 W; for F chunk 0 is stage r,
  // chunk 1 stage 2P-1-r; for I and W chunk 0 is stage 2P-1-r (the
  // gradient comes back down the V first), chunk 1 stage r.
  int Stage(int r, int cat, int chunk) const {
    const bool low = cat == 0 ? chunk == 0 : chunk == 1;
    return low ? r : 2 * P_ - 1 - r;
  }
  double Cost(int r, int cat, int chunk) const {
    const StageCost& c = req_.costs.stages[Stage(r, cat, chunk)];
    return cat == 0 ? c.f : (cat == 1 ? c.i : c.w);
  }
  double MemDelta(int r, int cat, int chunk) const {
    const StageMemory& mm = req_.costs.memory[Stage(r, cat, chunk)];
    if (cat == 0) return static_cast<double>(mm.activation);
    if (cat == 1) return static_cast<double>(mm.wstash - mm.activation);
    return -static_cast<double>(mm.wstash);
  }
  // Latency of the message into (r, cat, chunk) from its neighbour rank.
  double Comm(int r, int cat, int chunk) const {
    const int s = Stage(r, cat, chunk);
    const bool fwd = cat == 0;
    const int src = fwd ? s - 1 : s + 1;
    const StageMemory& mm = req_.costs.memory[src];
    return req_.costs.comm.MessageSeconds(fwd ? mm.send_forward : mm.send_backward);
  }
  double& End(int cat, int chunk, int r, int mb) {
    return end_[((static_cast<size_t>(cat) * 2 + chunk) * P_ + r) * m_ + mb];
  }
  // Input rank of (cat < 2, chunk) on rank r, or -1 (none / the turn).
  int Source(int r, int chunk) const {
    if (chunk == 1) return r + 1 < P_ ? r + 1 : -1;
    return r > 0 ? r - 1 : -1;
  }
  double MaxBubble(int r) const {
    double worst = *std::max_element(bubble_.begin(), bubble_.end());
    if (r >= 0 && approved_) worst = std::max(worst, max_approved_ - (*approved_)[r]);
    return worst;
  }
  bool Put(int cat, int chunk, int r);
  bool PutW(int r) {
    const int chunk = pending_w_[r].front();
    pending_w_[r].pop_front();
    return Put(2, chunk, r);
  }

  const ScheduleRequest& req_;
  const int P_, m_;
  const std::vector<double>& limits_;
  const bool fill_i_, fill_f_;
  const std::vector<double>* approved_ = nullptr;
  double max_approved_ = -1;
  std::vector<std::array<int, 6>> count_;
  std::vector<double> end_, cur_, mem_, bubble_;
  std::vector<std::deque<int>> pending_w_;
  Program prog_;
};

bool VRounds::Put(int cat, int chunk, int r) {
  int& n = count_[r][cat * 2 + chunk];
  if (n >= m_) return false;
  if (mem_[r] + MemDelta(r, cat, chunk) > limits_[r] + 1e-9 * std::max(1.0, limits_[r])) return false;
  const double no_wait = cur_[r] + Cost(r, cat, chunk);
  double t = no_wait;
  if (cat < 2) {
    const int src = Source(r, chunk);
    if (src >= 0) {
      const double in = End(cat, chunk, src, n);
      if (in < 0) return false;  // input not placed: the construction broke
      t = std::max(t, in + Comm(r, cat, chunk) + Cost(r, cat, chunk));
    }
  }
  if (count_[r][0] > 0) bubble_[r] += t - no_wait;
  End(cat, chunk, r, n) = t;
  cur_[r] = t;
  mem_[r] += MemDelta(r, cat, chunk);
  const ActionType type = cat == 0 ? ActionType::kF : (cat == 1 ? ActionType::kI : ActionType::kW);
  prog_.ranks[r].push_back(MakeAction(Stage(r, cat, chunk), type, n));
  if (cat == 1) pending_w_[r].push_back(chunk);
  ++n;
  return true;
}

bool VRounds::Run(const std::vector<double>* approved) {
  approved_ = approved;
  max_approved_ = approved ? *std::max_element(approved->begin(), approved->end()) : -1;
  count_.assign(P_, {0, 0, 0, 0, 0, 0});
  end_.assign(static_cast<size_t>(6) * P_ * m_, -1);
  cur_.assign(P_, 0);
  mem_.assign(P_, 0);
  bubble_.assign(P_, 0);
  pending_w_.assign(P_, {});
  prog_ = MakeEmptyProgram(req_, 2, Placement::kV);
  auto limit_ok = [&](int r, double more) { return mem_[r] + more <= limits_[r] + 1e-9 * std::max(1.0, limits_[r]); };
  // 1. warm-up
  for (int r = 0; r < P_; ++r)
    if (!Put(0, 0, r)) return false;
  for (int i = P_ - 1; i >= 0; --i) {
    if (i < P_ - 1) {
      const double arrive = End(0, 1, i + 1, 0) + Comm(i, 0, 1);
      while (limit_ok(i, MemDelta(i, 0, 0) * (2 + 2 * i)) && cur_[i] + Cost(i, 0, 0) <= arrive + 1e-12 &&
             count_[i][0] < m_)
        for (int j = 0; j <= i; ++j)
          if (!Put(0, 0, j)) return false;
    }
    if (!Put(0, 1, i)) return false;
  }
  int chunk = 0;
  for (int i = 1; i < P_; ++i)
    while (count_[i][0] + count_[i][1] < count_[i - 1][0] + count_[i - 1][1] ||
           (count_[i][1] <= count_[i - 1][1] && count_[i - 1][1] < m_)) {
      for (int j = P_ - 1; j >= i; --j)
        if (count_[j][chunk] < m_ && !Put(0, chunk, j)) return false;
      chunk = 1 - chunk;
    }
  // 2. rounds
  for (int round = 0; round < 2 * m_; ++round) {
    for (int r = 0; r < P_; ++r)
      while (!limit_ok(r, std::max(MemDelta(r, 1, 0), MemDelta(r, 1, 1)))) {
        if (pending_w_[r].empty() || !PutW(r)) return false;
      }
    std::vector<int> first, second;  // I of chunk 0 (stage 2P-1-r) / chunk 1
    for (int r = 0; r < P_; ++r) {
      if (count_[r][3] >= count_[r][2]) {
        first.push_back(r);
      } else if (r == P_ - 1) {
        second.push_back(r);
      } else if (End(1, 1, r + 1, count_[r][3]) >= 0 || count_[r][2] >= m_) {
        second.push_back(r);
      } else {
        first.push_back(r);
      }
    }
    std::vector<std::pair<int, int>> order;
    for (auto it = second.rbegin(); it != second.rend(); ++it) order.push_back({*it, 1});
    for (int r : first) order.push_back({r, 0});
    for (auto [r, ch] : order) {
      double ready = -1;
      bool has_src = false;
      if (ch == 1 && r < P_ - 1) ready = End(1, 1, r + 1, count_[r][3]), has_src = true;
      if (ch == 0 && r > 0) ready = End(1, 0, r - 1, count_[r][2]), has_src = true;
      const double comm = has_src ? Comm(r, 1, ch) : 0;
      const double w_cost = Cost(r, 2, 0);
      while (!pending_w_[r].empty() && has_src && ready + comm >= cur_[r] + w_cost)
        if (!PutW(r)) return false;
      // Without an input the reference still compares, with an end time of -1.
      const double wait = (has_src ? ready + comm : -1 + req_.costs.comm.latency_s) - cur_[r];
      if (!pending_w_[r].empty() && wait > MaxBubble(r) - bubble_[r] && (ch == 1 || fill_i_))
        if (!PutW(r)) return false;
      if (!Put(1, ch, r)) return false;
    }
    for (int r = 0; r < P_; ++r) {
      if (count_[r][1] >= m_) continue;
      int item = -1;
      if (count_[r][1] >= count_[r][0]) {
        item = 0;
      } else if (r == P_ - 1) {
        item = 1;
      } else if (End(0, 1, r + 1, count_[r][1]) >= 0) {
        item = 1;
      } else if (count_[r][0] < m_) {
        if (r == 0 || End(0, 0, r - 1, count_[r][0]) >= 0) item = 0;
      }
      if (item < 0) continue;
      while (!limit_ok(r, MemDelta(r, 0, item))) {
        if (pending_w_[r].empty() || !PutW(r)) return false;
      }
      double ready = -1;
      bool has_src = false;
      if (item == 0 && r > 0) ready = End(0, 0, r - 1, count_[r][0]), has_src = true;
      if (item == 1 && r < P_ - 1) ready = End(0, 1, r + 1, count_[r][1]), has_src = true;
      const double comm = has_src ? Comm(r, 0, item) : 0;
      const double w_cost = Cost(r, 2, 0);
      while (!pending_w_[r].empty() && has_src && ready + comm >= cur_[r] + w_cost)
        if (!PutW(r)) return false;
      const double wait = (has_src ? ready + comm : -1 + req_.costs.comm.latency_s) - cur_[r];
      if (!pending_w_[r].empty() && wait > MaxBubble(r) - bubble_[r] && fill_f_)
        if (!PutW(r)) return false;
      if (!Put(0, item, r)) return false;
    }
  }
  // 3. the rest of the W's
  for (int r = 0; r < P_; ++r)
    while (!pending_w_[r].empty())
      if (!PutW(r)) return false;
  for (int r = 0; r < P_; ++r)
    for (int k = 0; k < 6; ++k)
      if (count_[r][k] != m_) return false;
  return true;
}

}  // namespace

std::vector<Program> ZBVRoundCandidates(const ScheduleRequest& req, const std::vector<double>& limits,
                                        int* own_choice) {
  std::vector<Program> out;
  double own_best = 0;
  *own_choice = -1;
  for (bool fill_i : {true, false})
    for (bool fill_f : {true, false}) {
      // The first run, then re-runs with its bubbles approved while the
      // worst bubble shrinks (zbv.py's recursion).
      VRounds run(req, limits, fill_i, fill_f);
      if (!run.Run(nullptr)) continue;
      Program best = run.program();
      double best_bubble = run.WorstBubble();
      std::vector<double> approved = run.bubble();
      for (int depth = 0; depth < 64; ++depth) {
        VRounds again(req, limits, fill_i, fill_f);
        if (!again.Run(&approved)) break;
        const double prev_max = *std::max_element(approved.begin(), approved.end());
        if (again.WorstBubble() < best_bubble) {
          best = again.program();
          best_bubble = again.WorstBubble();
        }
        if (!(again.WorstBubble() < prev_max)) break;
        approved = again.bubble();
      }
      if (*own_choice < 0 || best_bubble < own_best) {
        *own_choice = static_cast<int>(out.size());
        own_best = best_bubble;
      }
      out.push_back(std::move(best));
    }
  return out;
}

}  // namespace pw
