// Unit-slot construction of V-shape schedules (see v_slots.h): slot grids
// to programs, and the fixed V-Half / V-Min blocks with greedy reordering
// (V-auto's building-block pipeline is v_blocks.cc). Method: Qi et al. 2024, "Pipeline Parallelism with Controllable
// Memory" (arXiv 2405.15362, §3-§4, Appendix A), as the authors implement
// it in sail-sg/zero-bubble-pipeline-parallelism (scheduler/zbv_greedy.py,
// scheduler/v_auto_schedule.py); written here from those steps.
#include "schedules/generators/v_slots.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>

#include "schedules/generators/generators.h"

namespace pw {

namespace {

// ---- fixed blocks (V-Half, V-Min): lists of slot times per kind -------------

// times[kind][k]: slot of microbatch k's pass of that kind on one rank.
// Kinds 0..3 = F f B b; kind 4 = all W's (chunk-agnostic) or, when split,
// 4 = W (chunk 1) and 5 = w (chunk 0).
using KindTimes = std::vector<std::vector<int>>;

int LastTime(const KindTimes& t) {
  int last = -1;
  for (const auto& v : t)
    if (!v.empty()) last = std::max(last, v.back());
  return last;
}

// The passes of one rank in slot order as the reference walks them: one
// pointer per kind, and at each slot s the earliest head (ties: lower kind)
// is taken only if its slot is s; otherwise s counts as idle. Two passes in
// one slot (the reorder moves a pass onto a slot that a not yet visited
// pass still holds) therefore leave the later kinds unvisited from there on,
// as in zbv_greedy.py. Calls visit(s, kind taken at slot s or -1) for
// s = 0..bound, stopping early if visit returns false.
//
// TakeAt is one slot of it: the kind taken at slot s by the walk whose
// per-kind pointers are next[0..kinds) (advanced past it), or -1.
int TakeAt(const KindTimes& t, int kinds, int* next, int s) {
  int best = -1, best_t = std::numeric_limits<int>::max();
  for (int k = 0; k < kinds; ++k)
    if (static_cast<size_t>(next[k]) < t[k].size() && t[k][next[k]] < best_t) best = k, best_t = t[k][next[k]];
  if (best < 0 || best_t != s) return -1;
  ++next[best];
  return best;
}

template <typename Visit>
void ForEachSlot(const KindTimes& t, int kinds, int bound, Visit visit) {
  int next[6] = {0, 0, 0, 0, 0, 0};  // kinds <= 6
  for (int s = 0; s <= bound; ++s)
    if (!visit(s, TakeAt(t, kinds, next, s))) return;
}

// at(s) = kind taken at slot s or -1 (ForEachSlot), s = 0..bound.
std::vector<int> WalkSlots(const KindTimes& t, int kinds, int bound) {
  std::vector<int> at(static_cast<size_t>(bound) + 1, -1);
  ForEachSlot(t, kinds, bound, [&](int s, int k) {
    at[s] = k;
    return true;
  });
  return at;
}

// Puts one W per I into the idle slots after it (FIFO; chunk 1's first when
// split), the rest after the last pass. `t` has kinds 0..3 only.
KindTimes PlaceW(KindTimes t, bool split) {
  const int bound = LastTime(t);
  const std::vector<int> busy = WalkSlots(t, 4, bound);
  t.resize(split ? 6 : 5);
  int pending[2] = {0, 0};
  int slot = 0;
  for (; slot <= bound; ++slot) {
    if (busy[slot] >= 0) {
      if (busy[slot] >= 2) ++pending[split ? busy[slot] - 2 : 0];
      continue;
    }
    for (int w = 0; w < 2; ++w)
      if (pending[w]) {
        t[4 + w].push_back(slot);
        --pending[w];
        break;
      }
  }
  slot = bound;
  for (int w = 0; w < 2; ++w)
    while (pending[w]-- > 0) t[4 + w].push_back(++slot);
  return t;
}

// The activation walk of one rank after some slot: ForEachSlot's pointers
// and the count of chunk activations (F/f +1, W -1; with kinds 0..3 only,
// each idle slot retires one pending W, as PlaceW would).
struct WalkState {
  int next[6] = {0, 0, 0, 0, 0, 0};  // per kind: index of its next pass
  int cur = 0;                       // activations held
  int pending = 0;                   // I's whose implicit W has not run
  bool operator==(const WalkState& o) const {
    return std::equal(next, next + 6, o.next) && cur == o.cur && pending == o.pending;
  }
};

// Moves `st` over slot s of t.
void AdvanceWalk(const KindTimes& t, WalkState& st, int s) {
  const int kinds = static_cast<int>(t.size());
  const int k = TakeAt(t, kinds, st.next, s);
  if (k >= 0) {
    if (k < 2)
      ++st.cur;
    else if (k < 4)
      ++st.pending;
    else
      --st.cur;
  } else if (kinds <= 4 && st.pending) {
    --st.cur;
    --st.pending;
  }
}

// Peak activation count of one rank (WalkState over its slots; 0 if empty).
int PeakOfTimes(const KindTimes& t) {
  WalkState st;
  int peak = 0;
  const int bound = LastTime(t);
  for (int s = 0; s <= bound; ++s) {
    AdvanceWalk(t, st, s);
    peak = std::max(peak, st.cur);
  }
  return peak;
}

// The dependency of (rank r, kind k, microbatch mb) in slot grids: the same
// kind on the neighbour rank (F, B from r - 1; f, b from r + 1), the previous
// kind on the same rank (f after F, B after f, b after B). Calls dep(rank,
// kind) for each.
template <typename Fn>
void ForEachDep(int P, int r, int k, Fn dep) {
  if ((k == 0 || k == 2) && r > 0) dep(r - 1, k);
  if ((k == 1 || k == 3) && r + 1 < P) dep(r + 1, k);
  if (k > 0 && k < 4) dep(r, k - 1);
}

// Visits every pass of `t` (all ranks) in (slot, rank, kind, microbatch)
// order: fn(rank, kind, mb) may change t[rank][kind][mb] (only that one).
// The heads of the (rank, kind) lists sit in a min-heap by (slot, rank,
// kind): the smallest head is the one a scan of every head would pick, and
// a visit changes no other head, so the order is that scan's.
template <typename Fn>
void InSlotOrder(std::vector<KindTimes>& t, Fn fn) {
  const int P = static_cast<int>(t.size());
  const int nk = static_cast<int>(t[0].size());
  using Head = std::tuple<int, int, int>;  // (slot, rank, kind)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  std::vector<std::vector<size_t>> next(P, std::vector<size_t>(nk, 0));
  for (int r = 0; r < P; ++r)
    for (int k = 0; k < nk; ++k)
      if (!t[r][k].empty()) heads.emplace(t[r][k][0], r, k);
  while (!heads.empty()) {
    const int r = std::get<1>(heads.top()), k = std::get<2>(heads.top());
    heads.pop();
    const int mb = static_cast<int>(next[r][k]++);
    fn(r, k, mb);
    if (next[r][k] < t[r][k].size()) heads.emplace(t[r][k][next[r][k]], r, k);
  }
}

// Unit-cost, zero-latency execution of the slot order: every pass starts
// when its rank is free and its inputs are done. Returns the start times.
std::vector<KindTimes> SqueezeUnit(std::vector<KindTimes> t) {
  const int P = static_cast<int>(t.size());
  std::vector<KindTimes> end = t;
  std::vector<int> free_at(P, 0);
  InSlotOrder(t, [&](int r, int k, int mb) {
    int start = free_at[r];
    if (k < 4) ForEachDep(P, r, k, [&](int dr, int dk) { start = std::max(start, end[dr][dk][mb]); });
    if (mb > 0) start = std::max(start, end[r][k][mb - 1]);
    end[r][k][mb] = start + 1;
    free_at[r] = start + 1;
  });
  for (int r = 0; r < P; ++r)
    for (size_t k = 0; k < t[r].size(); ++k)
      for (size_t mb = 0; mb < t[r][k].size(); ++mb) t[r][k][mb] = end[r][k][mb] - 1;
  return t;
}

// Maximum over a range of slots, with point updates (a segment tree over
// n slots; an empty range or an unset slot counts as INT_MIN).
class RangeMax {
 public:
  explicit RangeMax(int n = 0) : n_(std::max(n, 1)), v_(2 * static_cast<size_t>(n_), kNone) {}
  void Set(int i, int x) {
    size_t at = static_cast<size_t>(i) + n_;
    v_[at] = x;
    for (at /= 2; at >= 1; at /= 2) v_[at] = std::max(v_[2 * at], v_[2 * at + 1]);
  }
  int Max(int lo, int hi) const {  // over slots lo..hi
    int best = kNone;
    for (size_t a = static_cast<size_t>(lo) + n_, b = static_cast<size_t>(hi) + n_ + 1; a < b; a /= 2, b /= 2) {
      if (a & 1) best = std::max(best, v_[a++]);
      if (b & 1) best = std::max(best, v_[--b]);
    }
    return best;
  }

 private:
  static constexpr int kNone = std::numeric_limits<int>::min();
  int n_;
  std::vector<int> v_;
};

// One rank's activation walk stored slot by slot, for the reorder's tries.
// A try moves one pass from slot `original` to an earlier slot s: the walk
// before s is the stored one (the moved pass's head is past every slot
// before s either way), so the try resumes at s; and once its state equals
// the stored state at a slot at or after `original`, the rest of the walk
// is the stored one too (same pointers, same passes ahead). The answer is
// PeakOfTimes(t) <= limit, in O(slots walked) instead of O(row).
class StoredWalk {
 public:
  // Walks t (the rank's current slots) from slot 0.
  void Build(const KindTimes& t) {
    bound_ = LastTime(t);
    after_.assign(static_cast<size_t>(std::max(bound_, 0)) + 1, WalkState{});
    cur_ = RangeMax(bound_ + 1);
    WalkState st;
    for (int s = 0; s <= bound_; ++s) {
      AdvanceWalk(t, st, s);
      after_[s] = st;
      cur_.Set(s, st.cur);
    }
  }

  // PeakOfTimes(t) <= limit, where t is the stored slots with one pass moved
  // from `original` to s < original. Remembers the walk for Commit().
  bool TryPeakAtMost(const KindTimes& t, int s, int original, int limit) {
    tried_.clear();
    from_ = s;
    if (limit < 0) return false;  // the peak starts at 0
    if (s > 0 && cur_.Max(0, s - 1) > limit) return false;
    WalkState st = s > 0 ? after_[s - 1] : WalkState{};
    const int bound = LastTime(t);
    for (int x = s; x <= bound; ++x) {
      AdvanceWalk(t, st, x);
      if (st.cur > limit) return false;
      tried_.push_back(st);
      if (x >= original && x <= bound_ && st == after_[x]) {
        rejoined_ = true;
        return x == bound_ || cur_.Max(x + 1, bound_) <= limit;
      }
    }
    rejoined_ = false;
    return true;
  }

  // Stores the last successful try's slots as the rank's walk.
  void Commit() {
    const int to = from_ + static_cast<int>(tried_.size()) - 1;
    for (int x = from_; x <= to; ++x) {
      after_[x] = tried_[x - from_];
      cur_.Set(x, after_[x].cur);
    }
    if (rejoined_) return;
    for (int x = to + 1; x <= bound_; ++x) cur_.Set(x, std::numeric_limits<int>::min());
    bound_ = to;  // the moved pass was the last one
  }

 private:
  int bound_ = -1;                // last slot of the stored walk
  std::vector<WalkState> after_;  // [slot] -> state after it
  RangeMax cur_;                  // [slot] -> activations after it
  int from_ = 0;                  // last try: first slot walked
  std::vector<WalkState> tried_;  // last try: states from from_ on
  bool rejoined_ = false;         // last try met the stored walk again
};

// One reorder round of zbv_greedy.py: walks the passes in slot order and
// moves each to the earliest idle slot after its inputs, if the rank's peak
// does not grow. The steady phase (from rank 0's first b until the last F)
// stays as it is; before it only when `with_w`. Returns the squeezed times
// with W's placed (kinds 0..4).
std::vector<KindTimes> ReorderRound(std::vector<KindTimes> t, bool with_w) {
  const int P = static_cast<int>(t.size());
  if (with_w)
    for (auto& rt : t) rt = PlaceW(rt, false);
  int peak = 0;
  for (const auto& rt : t) peak = std::max(peak, PeakOfTimes(rt));
  std::vector<StoredWalk> walks(P);  // each rank's walk, for the peak check of a try
  for (int r = 0; r < P; ++r) walks[r].Build(t[r]);
  std::vector<std::vector<char>> used(P);
  for (int r = 0; r < P; ++r) used[r].assign(static_cast<size_t>(LastTime(t[r])) + 1, 0);
  const int m = static_cast<int>(t[0][0].size());
  int phase = 0;
  std::vector<int> is;  // buffer: one rank's I slots
  InSlotOrder(t, [&](int r, int k, int mb) {
    int& slot = t[r][k][mb];
    if (k == 3 && r == 0 && phase == 0) phase = 1;
    const bool keep = phase == 1 || (phase == 0 && !with_w);
    if (phase == 1 && k == 0 && mb == m - 1) phase = 2;
    if (keep) {
      used[r][slot] = 1;
      return;
    }
    int earliest = -1;
    ForEachDep(P, r, k, [&](int dr, int dk) { earliest = std::max(earliest, t[dr][dk][mb]); });
    if (k == 4) {  // the mb-th W follows the mb-th I of either chunk (the mb-th smallest I slot)
      is.assign(t[r][2].begin(), t[r][2].end());
      is.insert(is.end(), t[r][3].begin(), t[r][3].end());
      std::nth_element(is.begin(), is.begin() + mb, is.end());
      earliest = std::max(earliest, is[mb]);
    }
    if (mb > 0) earliest = std::max(earliest, t[r][k][mb - 1]);
    const int original = slot;
    bool moved = false;
    for (int s = earliest + 1; s < original && !moved; ++s) {
      if (used[r][s]) continue;
      slot = s;
      moved = walks[r].TryPeakAtMost(t[r], s, original, peak);
    }
    if (moved) walks[r].Commit();
    if (!moved) slot = original;
    used[r][slot] = 1;
  });
  if (!with_w)
    for (auto& rt : t) rt = PlaceW(rt, false);
  return SqueezeUnit(t);
}

}  // namespace

int SlotPeak(const std::string& row) {
  int cur = 0, peak = 0;
  for (char c : row) {
    if (c == 'F' || c == 'f') ++cur;
    if (c == 'W' || c == 'w') --cur;
    peak = std::max(peak, cur);
  }
  return peak;
}

Program ProgramFromSlots(const ScheduleRequest& req, const SlotGrid& grid) {
  const int P = req.pp_size;
  Program prog = MakeEmptyProgram(req, 2, Placement::kV);
  for (int r = 0; r < P; ++r) {
    const int chunk_stage[2] = {r, 2 * P - 1 - r};
    int count[6] = {0, 0, 0, 0, 0, 0};
    for (char c : grid[r]) {
      const int k = SlotKind(c);
      if (k < 0) continue;
      // F f | B b | W w: chunk 0 for F, b, w; chunk 1 for f, B, W.
      const int chunk = (k == 0 || k == 3 || k == 5) ? 0 : 1;
      const ActionType type = k < 2 ? ActionType::kF : (k < 4 ? ActionType::kI : ActionType::kW);
      prog.ranks[r].push_back(MakeAction(chunk_stage[chunk], type, count[k]++));
    }
  }
  return prog;
}

SlotGrid FixedBlockSlots(int P, int m, const std::vector<std::array<int, 4>>& offsets) {
  std::vector<KindTimes> t(P, KindTimes(4));
  for (int r = 0; r < P; ++r)
    for (int k = 0; k < 4; ++k)
      for (int mb = 0; mb < m; ++mb) t[r][k].push_back(offsets[r][k] + kSlotPeriod * mb);
  t = ReorderRound(t, true);
  for (auto& rt : t) rt.resize(4);
  t = ReorderRound(t, false);
  SlotGrid grid(P);
  for (int r = 0; r < P; ++r) {
    t[r].resize(4);
    const KindTimes full = PlaceW(t[r], true);
    grid[r].assign(static_cast<size_t>(LastTime(full)) + 1, ' ');
    for (int k = 0; k < 6; ++k)
      for (int s : full[k]) grid[r][s] = kSlotKinds[k];
  }
  return grid;
}

}  // namespace pw
