// The reference table of the V-shape families (tests/schedules/data/
// v_reference.tsv: cost and activation peak of the authors' V-Half, V-Min,
// V-auto and ZB-V schedulers, arXiv 2405.15362 / sail-sg/zero-bubble-
// pipeline-parallelism; how it was made is in the file's header) and the
// request that reproduces each cell with our generators. Shared by
// tests/schedules/v_reference_test.cc and bench/v_reference_bench.cc.
//
// Cell fields (tab separated): family (half | min | auto | zbv), P, m,
// profile, limit, reference cost, reference peak.
//   - profile: per-chunk (half-stage) F / I / W times and the latency of
//     every message between ranks: unit = 1/1/1, comm 0; unit_c1 = 1/1/1,
//     comm 1; 1.5B and 14.6B = half the ZB paper's Table 9 stage times (ms)
//     with its T_comm (first rows of zb_paper_bench: 18.522/18.086/9.337/
//     0.601 and 11.347/11.248/8.132/0.377 per stage).
//   - memory: one unit per chunk activation, held from F to W (I frees
//     nothing), for half/min/auto and for zbv with the unit profiles; zbv
//     with 1.5B / 14.6B uses the paper's M_B = sb(34h + 5as), M_W = 32sbh
//     per chunk (h, a of the model, s = 1024), and peaks in units of M_B.
//   - limit: auto: chunk activations per rank; zbv unit: chunk activations
//     (2P = 1F1B's memory); zbv 1.5B / 14.6B: multiples of M_B (P or 2P);
//     half/min: none ("-").
//   - cost: the ZB paper's cost, max over ranks of (end of the rank's last
//     pass - start of its first F) = our steady_step_s; peak: the largest
//     per-rank activation peak.
#pragma once

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "schedules/pipeline.h"
#include "schedules/registry.h"

namespace pw::vref {

struct Cell {
  std::string family, profile, limit;
  int P = 0, m = 0;
  double ref_cost = 0, ref_peak = 0;
  bool ref_none = false;  // the reference found no schedule
};

// Reads the table; '#' lines are comments. Empty on a missing file.
inline std::vector<Cell> ReadCells(const std::string& path) {
  std::vector<Cell> cells;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    Cell c;
    std::string cost, peak;
    ss >> c.family >> c.P >> c.m >> c.profile >> c.limit >> cost >> peak;
    c.ref_none = cost == "none";
    if (!c.ref_none) {
      c.ref_cost = std::stod(cost);
      c.ref_peak = std::stod(peak);
    }
    cells.push_back(c);
  }
  return cells;
}

inline std::string ScheduleName(const Cell& c) {
  if (c.family == "half") return "v-half";
  if (c.family == "min") return "v-min";
  if (c.family == "auto") return "v-auto";
  return "zb-v";
}

// The request of a cell (see the top of the file); `mem_unit` receives the
// bytes of one peak unit (chunk activation, or M_B).
inline ScheduleRequest CellRequest(const Cell& c, double* mem_unit) {
  struct Prof {
    const char* name;
    double f, b, w, comm;
    int h, a;  // 0: unit memory
  };
  static const Prof kProfiles[] = {{"unit", 1, 1, 1, 0, 0, 0},
                                   {"unit_c1", 1, 1, 1, 1, 0, 0},
                                   {"1.5B", 18.522 / 2, 18.086 / 2, 9.337 / 2, 0.601, 2304, 24},
                                   {"14.6B", 11.347 / 2, 11.248 / 2, 8.132 / 2, 0.377, 5120, 40}};
  Prof prof = kProfiles[0];
  for (const Prof& p : kProfiles)
    if (c.profile == p.name) prof = p;
  StageCost cost;
  cost.f = prof.f;
  cost.i = prof.b;
  cost.w = prof.w;
  StageMemory mem;  // activation = wstash = 1
  CommModel comm;
  comm.latency_s = prof.comm;
  *mem_unit = 1;
  double limit_unit = 1;
  if (c.family == "zbv" && prof.h > 0) {
    const double mb = 34.0 * prof.h + 5.0 * prof.a * 1024, mw = 32.0 * prof.h;
    mem.activation = std::llround(mb / 2);
    mem.wstash = std::llround(mw / 2);
    *mem_unit = mb;
    limit_unit = mb;
  }
  ScheduleRequest req;
  req.schedule = ScheduleName(c);
  req.pp_size = c.P;
  req.num_microbatches = c.m;
  req.virtual_stages = 2;
  req.costs = UniformCosts(2 * c.P, cost, mem, comm);
  if (c.limit != "-") req.memory_limit = std::stod(c.limit) * limit_unit;
  return req;
}

struct Outcome {
  bool ok = false;
  std::string error;
  double cost = 0, peak = 0;
};

// Ours for the cell: generate -> validate -> lower -> simulate (RunPipeline).
inline Outcome RunCell(const Cell& c) {
  double unit = 1;
  const ScheduleRequest req = CellRequest(c, &unit);
  Outcome o;
  auto run = RunPipeline(req);
  if (!run.ok()) {
    o.error = run.status().message();
    return o;
  }
  o.ok = true;
  o.cost = run->sim.steady_step_s;
  for (const auto& r : run->sim.per_rank)
    o.peak = std::max(o.peak, static_cast<double>(r.peak_memory_bytes - r.start_memory_bytes) / unit);
  return o;
}

// Ours minus the reference at the table's precision (6 decimals): the only
// tolerance is that rounding.
inline double CostExcess(const Cell& c, const Outcome& o) { return std::round(o.cost * 1e6) * 1e-6 - c.ref_cost; }

// The same for the peak, at the table's 4 decimals.
inline double PeakExcess(const Cell& c, const Outcome& o) { return std::round(o.peak * 1e4) * 1e-4 - c.ref_peak; }

}  // namespace pw::vref
