// Frozen generator output: every registered family over a grid of (P, v, m,
// cost profile, memory limit) must give exactly the program (or the error)
// recorded in tests/schedules/data/generation_digests.tsv. The table was
// written by the generators before their search was made faster (ZB greedy,
// V-shape searches), so a speed-up that changes any chosen order fails here.
// Each cell is digested (64-bit FNV-1a) over the program's shape and every
// rank's action list (Action::ToString), or over the error's code and
// message; the table keeps one digest per shape (family, P, v, m) over its
// cells. The first differing shape is printed with its cells' digests.
//
// Regenerate (only when a change of output is intended, and say so in the
// commit): PW_WRITE_GENERATION_DIGESTS=$PWD/tests/schedules/data/generation_digests.tsv
//   build/tests/schedules_test --gtest_filter='GenerationDigest.*'
// (it also writes every cell's digest to that path + ".cells", not kept in
// the repository: diff two of them to find the cell that moved).
// Under AddressSanitizer (tests/sanitized.h) only the cells with P <= 4 run.
//
// Regenerated once since: issue #25, the simulator's memory walk takes an
// OVERLAP_F_B as its F half, then its B half (docs/PLAN_FORMAT.md rule 7).
// The cells' memory limits are derived from the simulated peaks, so the 18
// DualPipeV shapes' limited cells (min, half, per-rank) changed request or
// error text; every unlimited cell and every other family kept its digest.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "base/hash.h"
#include "plan/plan.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"
#include "tests/sanitized.h"

namespace pw {
namespace {

// 64-bit FNV-1a of `text`, 16 hex digits.
std::string Fnv1a(const std::string& text) { return HashHex(Fnv1a64(text)); }

// The digest of a generator's answer: the program's shape and lists, or the error.
std::string Digest(const StatusOr<Program>& p) {
  std::ostringstream s;
  if (!p.ok()) {
    s << "error " << StatusCodeName(p.status().code()) << ' ' << p.status().message();
    return Fnv1a(s.str());
  }
  s << p->pp_size << ' ' << p->num_stages << ' ' << p->num_microbatches << ' ' << p->dp_size << '|';
  for (int r : p->stage_to_rank) s << r << ',';
  for (const auto& list : p->ranks) {
    s << '|';
    for (const Action& a : list) s << a.ToString() << ' ';
  }
  return Fnv1a(s.str());
}

// Cost profiles (per stage s of S): times in seconds, memory in bytes.
//   unit: F = I = W = 1, activation = wstash = 1, no messages.
//   comm: unit costs, 0.5 s per message between ranks.
//   paper: the ZB paper's 1.5B row (Table 9; 18.522 / 18.086 / 9.337 ms per
//          rank's model part, split over v stages), T_comm 0.601, M_B and M_W
//          of h = 2304, a = 24, s = 1024 split over v stages.
//   hetero: stages differ in time and memory, messages of 1000 bytes at 10^4 B/s
//          plus 0.05 s latency.
//   recompute: unit times, weight stash larger than the activation (5 vs 2).
StageCosts Profile(const std::string& name, int S, int v) {
  if (name == "comm") {
    CommModel comm;
    comm.latency_s = 0.5;
    return UniformCosts(S, StageCost{}, StageMemory{}, comm);
  }
  if (name == "paper") {
    StageCost c;
    c.f = 18.522 / v;
    c.i = 18.086 / v;
    c.w = 9.337 / v;
    StageMemory m;
    m.activation = std::llround((34.0 * 2304 + 5.0 * 24 * 1024) / v);
    m.wstash = std::llround(32.0 * 2304 / v);
    CommModel comm;
    comm.latency_s = 0.601;
    return UniformCosts(S, c, m, comm);
  }
  if (name == "hetero") {
    StageCosts costs = UniformCosts(S);
    costs.comm.latency_s = 0.05;
    costs.comm.bandwidth_bytes_per_s = 1e4;
    for (int s = 0; s < S; ++s) {
      costs.stages[s].f = 1.0 + 0.25 * (s % 3);
      costs.stages[s].i = 1.1 + 0.1 * (s % 2);
      costs.stages[s].w = 0.6 + 0.2 * (s % 4);
      costs.memory[s].activation = 3 + s % 2;
      costs.memory[s].wstash = 2 + (s % 3 == 0);
      costs.memory[s].send_forward = costs.memory[s].send_backward = 1000;
    }
    return costs;
  }
  if (name == "recompute") {
    StageMemory m;
    m.activation = 2;
    m.wstash = 5;
    return UniformCosts(S, StageCost{}, m);
  }
  return UniformCosts(S);
}

// The largest per-rank activation peak of `p` under `costs` (0 if it does not simulate).
int64_t MaxPeak(const StatusOr<Program>& p, const StageCosts& costs) {
  if (!p.ok()) return 0;
  auto sim = Simulate(*p, costs);
  if (!sim.ok()) return 0;
  int64_t peak = 0;
  for (const RankResult& rr : sim->per_rank) peak = std::max(peak, rr.peak_memory_bytes - rr.start_memory_bytes);
  return peak;
}

// One shape's cells: the request without a limit, then (if it simulates)
// under the one-microbatch minimum, halfway to the unlimited peak, the
// unlimited peak, and per-rank limits alternating between the minimum and
// the halfway point (`all_limits`; else only none and halfway).
template <typename Fn>
void ShapeCells(const std::string& family, int P, int v, int m, const std::string& profile, bool all_limits, Fn&& fn) {
  ScheduleRequest req;
  req.schedule = family;
  req.pp_size = P;
  req.num_microbatches = m;
  req.virtual_stages = v;
  req.costs = Profile(profile, P * v, v);
  const std::string key =
      family + "\t" + std::to_string(P) + "\t" + std::to_string(v) + "\t" + std::to_string(m) + "\t" + profile;
  const StatusOr<Program> free = GenerateSchedule(req);
  fn(key + "\tnone", free);
  const int64_t unlimited = MaxPeak(free, req.costs);
  const int64_t minimum = MaxPeak(OneMicrobatchOrder(req), req.costs);
  if (unlimited <= 0 || minimum <= 0) return;
  const int64_t half = (minimum + unlimited) / 2;
  std::vector<std::pair<std::string, int64_t>> limits = {{"half", half}};
  if (all_limits) limits = {{"min", minimum}, {"half", half}, {"peak", unlimited}};
  for (const auto& [name, limit] : limits) {
    req.memory_limit = static_cast<double>(limit);
    fn(key + "\t" + name, GenerateSchedule(req));
  }
  if (!all_limits) return;
  req.memory_limit.reset();
  for (int r = 0; r < P; ++r) req.rank_memory_limits.push_back(static_cast<double>(r % 2 ? minimum : half));
  fn(key + "\tper-rank", GenerateSchedule(req));
}

// Visits every cell as fn(key, generated): every family at P <= 8 (m from 1
// to 24 around P and 2P, v = the default and 3 where allowed, every profile
// and limit), and the searching families (ZB greedy, V-shape searches) also
// at P = 12 and 16 with m up to 64 (limits none and halfway), and the
// benchmark's P = 32, m = 256.
template <typename Fn>
void ForEachCell(Fn&& fn) {
  const std::vector<std::string> profiles = {"unit", "comm", "paper", "hetero", "recompute"};
  for (const std::string& family : ScheduleNames()) {
    const ScheduleInfo info = *FindSchedule(family);
    std::vector<int> vs = {info.default_virtual_stages};
    if (info.max_virtual_stages == 0 || info.max_virtual_stages > 2) vs.push_back(3);
    for (int v : vs)
      for (int P : {1, 2, 3, 4, 5, 8}) {
        if (testing::kSanitized && P > 4) continue;
        std::vector<int> ms = {1, 2, 3, P, 2 * P - 1, 2 * P + 1, 3 * P, 24};
        std::sort(ms.begin(), ms.end());
        ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
        for (int m : ms)
          for (const std::string& profile : profiles) ShapeCells(family, P, v, m, profile, true, fn);
      }
  }
  if (testing::kSanitized) return;
  for (const std::string family : {"zb-auto", "zb-v", "v-half", "v-min", "v-auto", "interleaved-zb"}) {
    const int v = family == "zb-auto" ? 1 : 2;
    for (int P : {12, 16})
      for (int m : {P + 3, 2 * P, 64})
        for (const std::string& profile : profiles) ShapeCells(family, P, v, m, profile, false, fn);
  }
  // The benchmark's shape (bench/schedules_bench BM_GenerateFamily): P = 32, m = 256, unit costs.
  for (const std::string family : {"zb-v", "v-half", "v-min", "v-auto", "interleaved-zb", "dualpipev"}) {
    ScheduleRequest req;
    req.schedule = family;
    req.pp_size = 32;
    req.num_microbatches = 256;
    req.virtual_stages = 2;
    fn(family + "\t32\t2\t256\tunit\tnone", GenerateSchedule(req));
  }
}

std::string TablePath() { return std::string(PW_SOURCE_DIR) + "/tests/schedules/data/generation_digests.tsv"; }

// Per shape "family\tP\tv\tm": its cell count and the digest of its cells'
// "profile limit digest" lines in visiting order. `cells_out`, if set,
// receives every cell's line "key\tdigest".
struct ShapeDigests {
  std::vector<std::string> order;
  std::map<std::string, std::pair<int, std::string>> shapes;  // shape -> (cells, concatenated lines)
};

ShapeDigests DigestEveryShape(std::string* cells_out) {
  ShapeDigests out;
  ForEachCell([&](const std::string& key, const StatusOr<Program>& p) {
    size_t cut = 0;
    for (int k = 0; k < 4; ++k) cut = key.find('\t', cut) + 1;
    const std::string shape = key.substr(0, cut - 1);
    const std::string line = key.substr(cut) + '\t' + Digest(p) + '\n';
    auto [it, added] = out.shapes.try_emplace(shape, 0, "");
    if (added) out.order.push_back(shape);
    ++it->second.first;
    it->second.second += line;
    if (cells_out) *cells_out += key + '\t' + Digest(p) + '\n';
  });
  return out;
}

TEST(GenerationDigest, EveryCellAsFrozen) {
  const auto t0 = std::chrono::steady_clock::now();
  if (const char* out = std::getenv("PW_WRITE_GENERATION_DIGESTS")) {
    std::string cells;
    const ShapeDigests d = DigestEveryShape(&cells);
    std::ostringstream table;
    table << "# Generator output digests (tests/schedules/generation_digest_test.cc), one row per shape:\n"
             "# family, P, v, m, cells (cost profile x memory limit), 64-bit FNV-1a over the cells' programs\n"
             "# (or errors). Written by that test with PW_WRITE_GENERATION_DIGESTS set (every cell's own digest\n"
             "# goes to the same path + .cells); regenerate only for an intended change of output.\n";
    for (const std::string& shape : d.order) {
      const auto& [n, lines] = d.shapes.at(shape);
      table << shape << '\t' << n << '\t' << Fnv1a(lines) << '\n';
    }
    ASSERT_TRUE(WriteFileAtomic(out, table.str()).ok()) << out;
    ASSERT_TRUE(WriteFileAtomic(std::string(out) + ".cells", cells).ok()) << out;
    std::printf("wrote %zu shapes to %s\n", d.order.size(), out);
    return;
  }
  std::map<std::string, std::pair<int, std::string>> want;  // shape -> (cells, digest)
  {
    std::ifstream in(TablePath());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t b = line.rfind('\t'), a = line.rfind('\t', b - 1);
      want[line.substr(0, a)] = {std::stoi(line.substr(a + 1, b - a - 1)), line.substr(b + 1)};
    }
  }
  ASSERT_GT(want.size(), 500u) << TablePath() << " missing or short";
  const ShapeDigests got = DigestEveryShape(nullptr);
  int cells = 0, mismatches = 0, missing = 0;
  std::string first;
  for (const std::string& shape : got.order) {
    const auto& [n, lines] = got.shapes.at(shape);
    cells += n;
    std::string where = shape;
    std::replace(where.begin(), where.end(), '\t', ' ');
    auto it = want.find(shape);
    if (it == want.end()) {
      ++missing;
      if (first.empty()) first = "shape not in the table: " + where;
      continue;
    }
    const std::string digest = Fnv1a(lines);
    if (it->second.first == n && it->second.second == digest) continue;
    ++mismatches;
    if (first.empty())
      first = "first mismatch: " + where + " (family P v m): " + std::to_string(n) + " cells, digest " + digest +
              "; frozen " + std::to_string(it->second.first) + " cells, " + it->second.second + ". Its cells now:\n" +
              lines + "(write both versions' .cells files to see which cell moved)";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%d cells in %zu shapes compared with the frozen digests in %.1f s: %d shapes differ, %d missing\n",
              cells, got.order.size(), secs, mismatches, missing);
  EXPECT_EQ(mismatches, 0) << first;
  EXPECT_EQ(missing, 0) << first;
  if (!testing::kSanitized) {
    EXPECT_EQ(got.order.size(), want.size()) << "table rows not in the grid";
  }
}

}  // namespace
}  // namespace pw
