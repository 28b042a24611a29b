// Unit-slot construction of V-shape schedules (see v_slots.h): the fixed
// V-Half / V-Min blocks with greedy reordering, and V-auto's
// repeat -> squeeze -> reorder warm-up -> remove padding -> reorder cool-down
// pipeline. Method: Qi et al. 2024, "Pipeline Parallelism with Controllable
// Memory" (arXiv 2405.15362, §3-§4, Appendix A), as the authors implement
// it in sail-sg/zero-bubble-pipeline-parallelism (scheduler/zbv_greedy.py,
// scheduler/v_auto_schedule.py); written here from those steps.
#include "schedules/generators/v_slots.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <tuple>

#include "schedules/generators/generators.h"

namespace pw {

namespace {

constexpr int kPeriod = 6;            // slots per microbatch and rank: 2 chunks x (F, I, W)
constexpr const char* kKinds = "FfBbWw";  // index = kind

// Kind index of a grid character (kKinds), -1 for anything else.
struct KindTable {
  signed char kind[256];
  KindTable() {
    for (int c = 0; c < 256; ++c) kind[c] = -1;
    for (int k = 0; k < 6; ++k) kind[static_cast<unsigned char>(kKinds[k])] = static_cast<signed char>(k);
  }
};
int KindOf(char c) {
  static const KindTable table;
  return table.kind[static_cast<unsigned char>(c)];
}

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
// as in zbv_greedy.py. at(s) = kind taken at slot s or -1.
std::vector<int> WalkSlots(const KindTimes& t, int kinds, int bound) {
  std::vector<int> at(static_cast<size_t>(bound) + 1, -1);
  std::vector<size_t> next(kinds, 0);
  for (int s = 0; s <= bound; ++s) {
    int best = -1, best_t = std::numeric_limits<int>::max();
    for (int k = 0; k < kinds; ++k)
      if (next[k] < t[k].size() && t[k][next[k]] < best_t) best = k, best_t = t[k][next[k]];
    if (best >= 0 && best_t == s) {
      at[s] = best;
      ++next[best];
    }
  }
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

// Peak activation count of one rank (F/f +1, W -1); with kinds 0..3 only,
// each idle slot retires one pending W (as PlaceW would).
int PeakOfTimes(const KindTimes& t) {
  const bool has_w = t.size() > 4;
  const int bound = LastTime(t);
  const std::vector<int> at = WalkSlots(t, static_cast<int>(t.size()), bound);
  int cur = 0, peak = 0, pending = 0;
  for (int s = 0; s <= bound; ++s) {
    const int k = at[s];
    if (k >= 0) {
      if (k < 2) ++cur;
      else if (k < 4) ++pending;
      else --cur;
    } else if (!has_w && pending) {
      --cur;
      --pending;
    }
    peak = std::max(peak, cur);
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
template <typename Fn>
void InSlotOrder(std::vector<KindTimes>& t, Fn fn) {
  const int P = static_cast<int>(t.size());
  const int nk = static_cast<int>(t[0].size());
  std::vector<std::vector<size_t>> next(P, std::vector<size_t>(nk, 0));
  size_t total = 0;
  for (const auto& rt : t)
    for (const auto& v : rt) total += v.size();
  for (size_t n = 0; n < total; ++n) {
    std::tuple<int, int, int> best{std::numeric_limits<int>::max(), 0, 0};
    for (int r = 0; r < P; ++r)
      for (int k = 0; k < nk; ++k)
        if (next[r][k] < t[r][k].size()) best = std::min(best, std::make_tuple(t[r][k][next[r][k]], r, k));
    const int r = std::get<1>(best), k = std::get<2>(best);
    const int mb = static_cast<int>(next[r][k]++);
    fn(r, k, mb);
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
  std::vector<std::vector<char>> used(P);
  for (int r = 0; r < P; ++r) used[r].assign(static_cast<size_t>(LastTime(t[r])) + 1, 0);
  const int m = static_cast<int>(t[0][0].size());
  int phase = 0;
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
    if (k == 4) {  // the mb-th W follows the mb-th I of either chunk
      std::vector<int> is = t[r][2];
      is.insert(is.end(), t[r][3].begin(), t[r][3].end());
      std::sort(is.begin(), is.end());
      earliest = std::max(earliest, is[mb]);
    }
    if (mb > 0) earliest = std::max(earliest, t[r][k][mb - 1]);
    const int original = slot;
    bool moved = false;
    for (int s = earliest + 1; s < original && !moved; ++s) {
      if (used[r][s]) continue;
      slot = s;
      moved = PeakOfTimes(t[r]) <= peak;
    }
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
      const int k = KindOf(c);
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
      for (int mb = 0; mb < m; ++mb) t[r][k].push_back(offsets[r][k] + kPeriod * mb);
  t = ReorderRound(t, true);
  for (auto& rt : t) rt.resize(4);
  t = ReorderRound(t, false);
  SlotGrid grid(P);
  for (int r = 0; r < P; ++r) {
    t[r].resize(4);
    const KindTimes full = PlaceW(t[r], true);
    grid[r].assign(static_cast<size_t>(LastTime(full)) + 1, ' ');
    for (int k = 0; k < 6; ++k)
      for (int s : full[k]) grid[r][s] = kKinds[k];
  }
  return grid;
}

// ---- V-auto: building-block pipeline on character grids -------------------

namespace {

using Grid = std::vector<std::string>;

bool IsDown(char c) { return c == 'F' || c == 'B'; }  // input from rank r - 1
bool IsUp(char c) { return c == 'f' || c == 'b'; }    // input from rank r + 1

// Slot of each (microbatch, rank, kind) while a grid is walked; -1 = not yet.
struct SlotIndex {
  int P;
  std::vector<std::array<int, 6>> at;  // [mb * P + rank][kind]
  SlotIndex(int P_, int m) : P(P_), at(static_cast<size_t>(P_) * m, {-1, -1, -1, -1, -1, -1}) {}
  int& operator()(int mb, int r, int k) { return at[static_cast<size_t>(mb) * P + r][k]; }
};

size_t GridWidth(const Grid& g) {
  size_t w = 0;
  for (const auto& row : g) w = std::max(w, row.size());
  return w;
}

void PadGrid(Grid* g) {
  const size_t w = GridWidth(*g);
  for (auto& row : *g) row.resize(w, ' ');
}

int GridPeak(const Grid& g) {
  int peak = 0;
  for (const auto& row : g) peak = std::max(peak, SlotPeak(row));
  return peak;
}

// Every pass as early as its inputs and its rank allow, order kept: slots
// are walked left to right, the downward kinds (F B W) from rank 0 up, then
// the upward ones (f b w) from rank P - 1 down. W's and the first pass of a
// direction need only their rank. Returns false on an order that cannot run.
bool Squeeze(Grid* g, int m) {
  const int P = static_cast<int>(g->size());
  PadGrid(g);
  const size_t width = GridWidth(*g);
  Grid out(P, std::string(width, ' '));
  std::vector<std::array<int, 6>> count(P, {0, 0, 0, 0, 0, 0});
  SlotIndex idx(P, m);
  std::vector<int> next(P, 0);
  for (size_t j = 0; j < width; ++j)
    for (int dir = 0; dir < 2; ++dir)
      for (int n = 0; n < P; ++n) {
        const int r = dir == 0 ? n : P - 1 - n;
        const char c = (*g)[r][j];
        const int k = KindOf(c);
        if (k < 0) continue;
        const bool down = c == 'F' || c == 'B' || c == 'W';
        if (down != (dir == 0)) continue;
        const int mb = count[r][k];
        if (mb >= m) return false;
        int at = next[r];
        if (!(c == 'W' || c == 'w' || (r == 0 && IsDown(c)) || (r == P - 1 && IsUp(c)))) {
          const int src = IsDown(c) ? idx(mb, r - 1, k) : idx(mb, r + 1, k);
          if (src < 0) return false;
          at = std::max(at, src + 1);
        }
        if (static_cast<size_t>(at) >= out[r].size()) out[r].resize(at + 1, ' ');
        out[r][at] = c;
        count[r][k] = mb + 1;
        idx(mb, r, k) = at;
        next[r] = at + 1;
      }
  const int len = *std::max_element(next.begin(), next.end());
  for (auto& row : out) row.resize(len, ' ');
  *g = std::move(out);
  return true;
}

// Warm-up as the paper draws it (v_auto_schedule.py
// process_warmup_without_increasing_peak_mem): the passes before a rank's
// first b are laid out again: 2(P-1-r) slots of F's, then i+1 (F, f) pairs,
// then (B, W, f-or-F) triples; rank r keeps min(r+1, peak/2) f's and
// peak - that many F's in flight before its first B.
void ReorderWarmup(Grid* g, int m) {
  const int P = static_cast<int>(g->size());
  const int peak = std::min(GridPeak(*g), 2 * P);
  for (int r = 0; r < P; ++r) {
    std::string& row = (*g)[r];
    const int want_ff = std::min({r + 1, peak / 2, m});
    const int want_f = std::min(peak - want_ff, m);
    int c_f = 0, c_ff = 0, c_b = 0, c_w = 0;
    for (size_t j = 0; j < row.size(); ++j) {
      const char c = row[j];
      if (c == 'b') break;
      if (c == 'F') ++c_f;
      if (c == 'f') ++c_ff;
      if (c == 'B') ++c_b;
      if (c == 'W') ++c_w;
      row[j] = ' ';
    }
    size_t j = r;
    int u_f = 0, u_ff = 0, u_b = 0, u_w = 0;
    auto put = [&](char c) {
      if (j >= row.size()) row.resize(j + 1, ' ');
      row[j] = c;
    };
    for (int n = 0; n < 2 * (P - 1 - r); ++n, ++j)
      if (u_f < want_f && u_f < c_f) put('F'), ++u_f;
    for (int n = 0; n < r + 1; ++n) {
      if (u_f < want_f && u_f < c_f) put('F'), ++u_f;
      ++j;
      if (u_ff < want_ff && u_ff < c_ff) put('f'), ++u_ff;
      ++j;
    }
    while (u_f < c_f || u_ff < c_ff || u_b < c_b || u_w < c_w) {
      if (u_b < c_b) put('B'), ++u_b;
      ++j;
      if (u_w < c_w) put('W'), ++u_w;
      ++j;
      if (u_ff < c_ff) put('f'), ++u_ff;
      else if (u_f < c_f) put('F'), ++u_f;
      ++j;
    }
  }
  PadGrid(g);
}

// Cool-down as the paper draws it (process_cooldown): after the last f the
// trailing b's and B's of each rank are re-placed on a tight staircase
// ((peak+1)/2 b's, min(r+1, peak - that) B's), trailing W's removed and put
// back into the idle slots after the rank's last remaining W, then squeezed.
bool ReorderCooldown(Grid* g, int m) {
  const int P = static_cast<int>(g->size());
  const int peak = GridPeak(*g);
  if (peak > 2 * P) return false;
  const int max_bb = std::min((peak + 1) / 2, m);
  const int max_b = std::min(peak - max_bb, m);
  int start = -1;
  for (int r = 0; r < P; ++r) {
    std::string& row = (*g)[r];
    int c_b = 0, c_bb = 0, c_w = 0, c_ww = 0, last_ff = -1;
    for (int j = static_cast<int>(row.size()) - 1; j >= 0; --j) {
      const char c = row[j];
      if (c == 'f' && last_ff == -1) last_ff = j;
      if (c == 'B' && c_b < r + 1 && c_b < max_b) row[j] = ' ', ++c_b;
      if (c == 'b' && c_bb < max_bb) row[j] = ' ', ++c_bb;
    }
    for (int j = static_cast<int>(row.size()) - 1; j >= 0; --j) {
      if (c_w >= c_b && c_ww >= c_bb && c_w + c_ww >= peak) break;
      if (row[j] == 'W') row[j] = ' ', ++c_w;
      if (row[j] == 'w') row[j] = ' ', ++c_ww;
    }
    if (r == 0) start = last_ff;
    for (int k = 0; k < c_bb; ++k) {
      const int at = start - r + 2 * P - 2 * k;
      if (at < 0) return false;
      if (static_cast<size_t>(at) >= row.size()) row.resize(at + 1, ' ');
      if (row[at] != ' ') return false;
      row[at] = 'b';
    }
    for (int k = 0; k < c_b; ++k) {
      const int at = start + 1 + r - 2 * k;
      if (at < 0) return false;
      if (static_cast<size_t>(at) >= row.size()) row.resize(at + 1, ' ');
      row[at] = 'B';
    }
  }
  PadGrid(g);
  for (int r = 0; r < P; ++r) {
    std::string& row = (*g)[r];
    int owe_w = 0, owe_ww = 0, last_w = -1;
    for (int j = static_cast<int>(row.size()) - 1; j >= 0; --j)
      if (row[j] == 'W' || row[j] == 'w') {
        last_w = j;
        break;
      }
    for (int j = 0; j < static_cast<int>(row.size()); ++j) {
      const char c = row[j];
      if (c == 'B') ++owe_w;
      if (c == 'b') ++owe_ww;
      if (c == 'W') --owe_w;
      if (c == 'w') --owe_ww;
      if (c == ' ' && j > last_w) {
        if (owe_w > 0) row[j] = 'W', --owe_w;
        else if (owe_ww > 0) row[j] = 'w', --owe_ww;
      }
    }
    row.append(std::max(owe_w, 0), 'W');
    row.append(std::max(owe_ww, 0), 'w');
  }
  PadGrid(g);
  return Squeeze(g, m);
}

// Too few microbatches to fill the memory (m <= P): moves each rank's first
// W's to the end until its peak reaches `peak` (release_w_in_warmup...).
void ReleaseWarmupW(Grid* g, int peak) {
  const int P = static_cast<int>(g->size());
  PadGrid(g);
  std::vector<int> peaks(P);
  for (int r = 0; r < P; ++r) peaks[r] = SlotPeak((*g)[r]);
  const int low = *std::min_element(peaks.begin(), peaks.end());
  const size_t width = GridWidth(*g);
  for (int r = 0; r < P; ++r) {
    std::string& row = (*g)[r];
    std::string tail(std::max(peak - low, 0), ' ');
    size_t moved = 0;
    for (size_t j = 0; j < width && moved < tail.size(); ++j) {
      if (peaks[r] + static_cast<int>(moved) >= peak) break;
      if (row[j] == 'W' || row[j] == 'w') {
        tail[moved++] = row[j];
        row[j] = ' ';
      }
    }
    row += tail;
  }
}

// Fills each idle slot, left to right, with the first later pass of the
// rank (one per kind, the earliest of that kind) whose inputs are already
// placed before it and that does not raise the peak
// (reorder_greedily_without_increasing_peak_mem).
void FillBubbles(Grid* g, int m) {
  const int P = static_cast<int>(g->size());
  PadGrid(g);
  const int peak = GridPeak(*g);
  const int width = static_cast<int>(GridWidth(*g));
  std::vector<std::array<int, 6>> last(P, {-1, -1, -1, -1, -1, -1});
  for (int r = 0; r < P; ++r)
    for (int j = 0; j < width; ++j)
      if (KindOf((*g)[r][j]) >= 0) last[r][KindOf((*g)[r][j])] = j;
  std::vector<int> mem(P, 0);
  std::vector<std::array<int, 6>> count(P, {0, 0, 0, 0, 0, 0});
  SlotIndex idx(P, m);
  auto place = [&](int r, int j, char c) {
    const int k = KindOf(c);
    idx(count[r][k]++, r, k) = j;
    if (c == 'F' || c == 'f') ++mem[r];
    if (c == 'W' || c == 'w') --mem[r];
  };
  for (int j = 0; j < width; ++j)
    for (int r = 0; r < P; ++r) {
      std::string& row = (*g)[r];
      if (row[j] != ' ') {
        place(r, j, row[j]);
        continue;
      }
      bool avail[6];
      int n_avail = 0;
      for (int k = 0; k < 6; ++k) n_avail += (avail[k] = last[r][k] > j);
      int delta = 0, delta_peak = 0;
      for (int s = j + 1; s < width && n_avail > 0; ++s) {
        const char c = row[s];
        if (c == 'F' || c == 'f') ++delta;
        if (c == 'W' || c == 'w') --delta;
        const int prev_peak = delta_peak;
        delta_peak = std::max(delta_peak, delta);
        const int k = KindOf(c);
        if (k < 0 || !avail[k]) continue;
        avail[k] = false;
        --n_avail;
        if ((c == 'F' || c == 'f') && mem[r] + prev_peak >= peak) continue;
        const int mb = count[r][k];
        bool ok = true;
        if (c == 'F' || c == 'B') {
          if (r > 0) {
            const int src = idx(mb, r - 1, k);
            ok = src > -1 && src < j;
          } else if (c == 'B') {
            ok = count[r][1] > mb;  // rank 0's B follows its f
          }
        } else if (c == 'f' || c == 'b') {
          if (r + 1 < P) {
            const int src = idx(mb, r + 1, k);
            ok = src > -1 && src < j;
          } else {
            ok = count[r][c == 'f' ? 0 : 2] > mb;  // the turn: f after F, b after B
          }
        } else {
          ok = count[r][c == 'W' ? 2 : 3] > mb;
        }
        if (!ok) continue;
        row[j] = c;
        row[s] = ' ';
        place(r, j, c);
        break;
      }
    }
}

// The k-th W (w) of a rank belongs to its k-th I of either chunk, FIFO.
bool RelabelW(Grid* g) {
  for (auto& row : *g) {
    std::deque<char> owed;
    for (char& c : row) {
      if (c == 'B') owed.push_back('W');
      if (c == 'b') owed.push_back('w');
      if (c == 'W' || c == 'w') {
        if (owed.empty()) return false;
        c = owed.front();
        owed.pop_front();
      }
    }
    if (!owed.empty()) return false;
  }
  return true;
}

// Keeps the first m passes of each kind on each rank.
void DropPadding(Grid* g, int m) {
  for (auto& row : *g) {
    int count[6] = {0, 0, 0, 0, 0, 0};
    for (char& c : row) {
      const int k = KindOf(c);
      if (k >= 0 && count[k]++ >= m) c = ' ';
    }
  }
}

// Every pass of m microbatches once, each after its inputs (slot order).
bool ValidVGrid(const Grid& g, int m) {
  const int P = static_cast<int>(g.size());
  SlotIndex idx(P, m);
  for (int r = 0; r < P; ++r) {
    int count[6] = {0, 0, 0, 0, 0, 0};
    for (size_t j = 0; j < g[r].size(); ++j) {
      const int k = KindOf(g[r][j]);
      if (k < 0) continue;
      if (count[k] >= m) return false;
      idx(count[k]++, r, k) = static_cast<int>(j);
    }
    for (int k = 0; k < 6; ++k)
      if (count[k] != m) return false;
  }
  for (int r = 0; r < P; ++r)
    for (int mb = 0; mb < m; ++mb) {
      auto at = [&](int rr, char c) { return idx(mb, rr, KindOf(c)); };
      if (at(r, 'B') >= at(r, 'W') || at(r, 'b') >= at(r, 'w')) return false;
      if (r == 0 && at(r, 'f') >= at(r, 'B')) return false;
      if (r == P - 1 && (at(r, 'F') >= at(r, 'f') || at(r, 'B') >= at(r, 'b'))) return false;
      if (r > 0 && (at(r - 1, 'F') >= at(r, 'F') || at(r - 1, 'B') >= at(r, 'B'))) return false;
      if (r + 1 < P && (at(r + 1, 'f') >= at(r, 'f') || at(r + 1, 'b') >= at(r, 'b'))) return false;
    }
  return true;
}

// The block repeated over the grid, passes of microbatches outside
// [0, n) blanked (clear_invalid_index): walking the second period, each
// kind's first appearance per rank (F, B from rank 0 up; f, b from P - 1
// down; W, w with their I) is microbatch 0.
Grid RepeatBlock(int P, int n, const std::vector<std::array<int, 6>>& block) {
  const int reps = 4 * P + n + 1;
  Grid g(P, std::string(static_cast<size_t>(reps) * kPeriod, ' '));
  for (int r = 0; r < P; ++r)
    for (int k = 0; k < 6; ++k)
      if (block[r][k] >= 0)
        for (int i = 0; i < reps; ++i) g[r][static_cast<size_t>(i) * kPeriod + block[r][k]] = kKinds[k];
  auto clear = [&](int r, int pos, int step) {
    while (pos >= 0 && pos < static_cast<int>(g[r].size())) {
      g[r][pos] = ' ';
      pos += step * kPeriod;
    }
  };
  int index = kPeriod;
  for (char id : std::string("FfBb")) {
    for (int n_r = 0; n_r < P; ++n_r) {
      const int r = (id == 'F' || id == 'B') ? n_r : P - 1 - n_r;
      for (int j = 0; j < kPeriod; ++j) {
        if (g[r][index] == id) {
          clear(r, index - kPeriod, -1);
          clear(r, index + kPeriod * n, 1);
          ++index;
          if (id == 'B' || id == 'b') {
            const char wid = id == 'B' ? 'W' : 'w';
            for (int k = 0; k < kPeriod; ++k)
              if (g[r][index + k] == wid) {
                clear(r, index + k - kPeriod, -1);
                clear(r, index + k + kPeriod * n, 1);
                break;
              }
          }
          break;
        }
        ++index;
      }
    }
  }
  return g;
}

}  // namespace

bool BlockSchedule(int P, int m, const std::vector<std::array<int, 6>>& block, int max_mem, SlotGrid* out,
                   int* peak_out) {
  const int n = std::max(m, 2 * P);  // padded with microbatches, dropped later
  Grid g = RepeatBlock(P, n, block);
  int start_peak = GridPeak(g);
  *peak_out = start_peak;
  if ((m == n && start_peak > max_mem) || start_peak > 2 * P) return false;
  if (!Squeeze(&g, n)) return false;
  ReorderWarmup(&g, n);
  if (!Squeeze(&g, n)) return false;
  int peak = GridPeak(g);
  if (peak > start_peak) return false;
  if (m < n) {
    DropPadding(&g, m);
    if (m <= P && 2 * m <= max_mem) ReleaseWarmupW(&g, std::min(2 * P, peak));
    if (!Squeeze(&g, m)) return false;
    start_peak = peak = GridPeak(g);
    *peak_out = peak;
    if (peak > max_mem) return false;
  }
  if (!ReorderCooldown(&g, m)) return false;
  FillBubbles(&g, m);
  if (!RelabelW(&g)) return false;
  peak = GridPeak(g);
  *peak_out = peak;
  if (peak > start_peak) {
    *peak_out = start_peak;
    return false;
  }
  if (!ValidVGrid(g, m)) return false;
  *out = std::move(g);
  return true;
}

void ForEachVBlock(int P, const std::function<bool(const std::vector<std::array<int, 6>>&)>& visit) {
  // W (w) takes the first free slot at or after B (b), cyclically.
  auto fill_w = [](std::array<int, 6>& pat) {
    bool used[kPeriod] = {};
    for (int k = 0; k < 4; ++k)
      if (pat[k] >= 0) used[pat[k]] = true;
    for (int k = 2; k < 4; ++k)
      for (int j = 0; j < kPeriod; ++j) {
        const int pos = (pat[k] + j) % kPeriod;
        if (!used[pos]) {
          pat[k + 2] = pos;
          used[pos] = true;
          break;
        }
      }
  };
  std::vector<std::array<int, 6>> starts;
  for (int a = 1; a < kPeriod; ++a)
    for (int b = 1; b < kPeriod; ++b)
      for (int c = 1; c < kPeriod; ++c) {
        if (a == b || a == c || b == c) continue;
        std::array<int, 6> pat = {0, a, b, c, -1, -1};
        fill_w(pat);
        starts.push_back(pat);
      }
  for (const auto& first : starts)
    for (int d0 = 1; d0 <= 5; ++d0)
      for (int d1 = 1; d1 <= d0; ++d1)
        for (int len0 = 1; len0 < P; ++len0) {
          std::vector<std::array<int, 6>> block = {first};
          bool ok = true;
          for (int i = 0; i + 1 < P && ok; ++i) {
            const int d = i < len0 ? d0 : d1;
            const int shift[4] = {d, -1, d, -1};
            std::array<int, 6> next = {-1, -1, -1, -1, -1, -1};
            bool used[kPeriod] = {};
            for (int k = 0; k < 4 && ok; ++k) {
              const int pos = (block[i][k] + shift[k] + kPeriod) % kPeriod;
              if (used[pos]) ok = false;
              used[pos] = true;
              next[k] = pos;
            }
            if (!ok) break;
            fill_w(next);
            block.push_back(next);
          }
          if (!ok) continue;
          if (visit(block)) break;
        }
}

}  // namespace pw
