// V-auto's building-block pipeline on slot grids (see v_slots.h):
// repeat -> squeeze -> reorder warm-up -> remove padding -> reorder cool-down.
// Method: Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"
// (arXiv 2405.15362, §3-§4, Appendix A), as the authors implement it in
// sail-sg/zero-bubble-pipeline-parallelism (scheduler/v_auto_schedule.py);
// written here from those steps.
#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "schedules/generators/v_slots.h"

namespace pw {

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
        const int k = SlotKind(c);
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
      if (u_ff < c_ff)
        put('f'), ++u_ff;
      else if (u_f < c_f)
        put('F'), ++u_f;
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
        if (owe_w > 0)
          row[j] = 'W', --owe_w;
        else if (owe_ww > 0)
          row[j] = 'w', --owe_ww;
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
// (reorder_greedily_without_increasing_peak_mem). As the reference, a kind
// counts as available while the slot is before the kind's last slot in the
// grid as it was on entry (`last`), even after that pass has moved.
void FillBubbles(Grid* g, int m) {
  const int P = static_cast<int>(g->size());
  PadGrid(g);
  const int peak = GridPeak(*g);
  const int width = static_cast<int>(GridWidth(*g));
  std::vector<std::array<int, 6>> last(P, {-1, -1, -1, -1, -1, -1});
  for (int r = 0; r < P; ++r)
    for (int j = 0; j < width; ++j)
      if (SlotKind((*g)[r][j]) >= 0) last[r][SlotKind((*g)[r][j])] = j;
  // The last slot that holds each kind now (moves only go left). An
  // available kind with no pass after the idle slot any more can never be
  // found, so the scan stops once every kind that still has one was met
  // (the rest of the scan could change nothing) instead of at the row's end.
  std::vector<std::array<int, 6>> now_last = last;
  std::vector<int> mem(P, 0);
  std::vector<std::array<int, 6>> count(P, {0, 0, 0, 0, 0, 0});
  SlotIndex idx(P, m);
  auto place = [&](int r, int j, char c) {
    const int k = SlotKind(c);
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
      int n_avail = 0, n_findable = 0;  // available kinds; those with a pass after j
      for (int k = 0; k < 6; ++k) {
        n_avail += (avail[k] = last[r][k] > j);
        n_findable += avail[k] && now_last[r][k] > j;
      }
      int delta = 0, delta_peak = 0;
      for (int s = j + 1; s < width && n_avail > 0 && n_findable > 0; ++s) {
        const char c = row[s];
        if (c == 'F' || c == 'f') ++delta;
        if (c == 'W' || c == 'w') --delta;
        const int prev_peak = delta_peak;
        delta_peak = std::max(delta_peak, delta);
        const int k = SlotKind(c);
        if (k < 0 || !avail[k]) continue;
        avail[k] = false;
        --n_avail;
        --n_findable;
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
        if (now_last[r][k] == s)  // the kind's last pass moved: its new last is in [j, s)
          for (int x = s - 1; x >= j; --x)
            if (SlotKind(row[x]) == k) {
              now_last[r][k] = x;
              break;
            }
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
      const int k = SlotKind(c);
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
      const int k = SlotKind(g[r][j]);
      if (k < 0) continue;
      if (count[k] >= m) return false;
      idx(count[k]++, r, k) = static_cast<int>(j);
    }
    for (int k = 0; k < 6; ++k)
      if (count[k] != m) return false;
  }
  for (int r = 0; r < P; ++r)
    for (int mb = 0; mb < m; ++mb) {
      auto at = [&](int rr, char c) { return idx(mb, rr, SlotKind(c)); };
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
  Grid g(P, std::string(static_cast<size_t>(reps) * kSlotPeriod, ' '));
  for (int r = 0; r < P; ++r)
    for (int k = 0; k < 6; ++k)
      if (block[r][k] >= 0)
        for (int i = 0; i < reps; ++i) g[r][static_cast<size_t>(i) * kSlotPeriod + block[r][k]] = kSlotKinds[k];
  auto clear = [&](int r, int pos, int step) {
    while (pos >= 0 && pos < static_cast<int>(g[r].size())) {
      g[r][pos] = ' ';
      pos += step * kSlotPeriod;
    }
  };
  int index = kSlotPeriod;
  for (char id : std::string("FfBb")) {
    for (int n_r = 0; n_r < P; ++n_r) {
      const int r = (id == 'F' || id == 'B') ? n_r : P - 1 - n_r;
      for (int j = 0; j < kSlotPeriod; ++j) {
        if (g[r][index] == id) {
          clear(r, index - kSlotPeriod, -1);
          clear(r, index + kSlotPeriod * n, 1);
          ++index;
          if (id == 'B' || id == 'b') {
            const char wid = id == 'B' ? 'W' : 'w';
            for (int k = 0; k < kSlotPeriod; ++k)
              if (g[r][index + k] == wid) {
                clear(r, index + k - kSlotPeriod, -1);
                clear(r, index + k + kSlotPeriod * n, 1);
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
    bool used[kSlotPeriod] = {};
    for (int k = 0; k < 4; ++k)
      if (pat[k] >= 0) used[pat[k]] = true;
    for (int k = 2; k < 4; ++k)
      for (int j = 0; j < kSlotPeriod; ++j) {
        const int pos = (pat[k] + j) % kSlotPeriod;
        if (!used[pos]) {
          pat[k + 2] = pos;
          used[pos] = true;
          break;
        }
      }
  };
  std::vector<std::array<int, 6>> starts;
  for (int a = 1; a < kSlotPeriod; ++a)
    for (int b = 1; b < kSlotPeriod; ++b)
      for (int c = 1; c < kSlotPeriod; ++c) {
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
            bool used[kSlotPeriod] = {};
            for (int k = 0; k < 4 && ok; ++k) {
              const int pos = (block[i][k] + shift[k] + kSlotPeriod) % kSlotPeriod;
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
