#include "planner/candidate_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "planner/cost_model.h"
#include "planner/explain.h"
#include "schedules/pipeline.h"

namespace pw {

namespace {

void Reject(Candidate& c, RejectKind kind, std::string reason) {
  c.reject = kind;
  c.reason = std::move(reason);
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

int WorstRank(const std::vector<int64_t>& peaks) {
  return static_cast<int>(std::max_element(peaks.begin(), peaks.end()) - peaks.begin());
}

int64_t SumStaticOfRank(const LayerCostTable& t, const Boundaries& b, const std::vector<int>& s2r, int r) {
  int64_t st = 0;
  for (size_t s = 0; s + 1 < b.size(); ++s)
    if (s2r[s] == r) st += SumStage(t, b[s], b[s + 1]).memory.static_bytes;
  return st;
}

}  // namespace

const UnitOrders::Order& UnitOrders::Full(const ScheduleInfo& family, int P, int v, int m) {
  auto key = std::make_tuple(family.name, P, v, m);
  auto cached = full_.find(key);
  if (cached != full_.end()) return cached->second;
  ScheduleRequest unit;
  unit.schedule = family.name;
  unit.pp_size = P;
  unit.num_microbatches = m;
  unit.virtual_stages = v;
  auto prog = GenerateSchedule(unit);
  Order o{prog.ok() ? Status::Ok() : prog.status(), {}, nullptr};
  if (prog.ok()) {
    o.profile = std::make_shared<const MemoryProfile>(*prog);
    o.stage_to_rank = prog->stage_to_rank;
  }
  return full_.emplace(key, std::move(o)).first->second;
}

const UnitOrders::Order& UnitOrders::Least(const ScheduleInfo& family, int P, int v) {
  auto key = std::make_tuple(family.name, P, v);
  auto cached = least_.find(key);
  if (cached != least_.end()) return cached->second;
  ScheduleRequest unit;
  unit.schedule = family.name;
  unit.pp_size = P;
  unit.num_microbatches = 1;
  unit.virtual_stages = v;
  auto one = OneMicrobatchOrder(unit);
  Order o{one.ok() ? Status::Ok() : one.status(), {}, nullptr};
  if (one.ok()) {
    o.profile = std::make_shared<const MemoryProfile>(*one);
    o.stage_to_rank = one->stage_to_rank;
  }
  return least_.emplace(key, std::move(o)).first->second;
}

CandidateSearch::CandidateSearch(const PlannerModel& model, const PlannerOptions& options, int64_t limit,
                                 UnitOrders* orders)
    : model_(model), opt_(options), limit_(limit), orders_(orders ? orders : &own_orders_) {
  dp_.dp_size = options.dp_size;
  dp_.distributed_optimizer = options.distributed_optimizer;
  dp_.precision = options.precision;
  if (model.device) {
    // A data-parallel group's D ranks are T apart (TP innermost): the ring
    // stays in a node when the D x T ranks it spans do.
    dp_.link = model.device->DataParallelLink(options.dp_size * std::max(options.tp_size, 1));
  } else {
    // A layer-cost file or profile without --device: its own link (or none).
    Recompute rc = Recompute::kNone;
    if (model.table) {
      auto parsed = ParseRecompute(model.table->recompute);
      if (parsed.ok()) rc = *parsed;
    }
    auto t = CostsFor(model, options, options.micro_batch_size.value_or(1), rc);
    if (t.ok() && t->comm) dp_.link = *t->comm;
  }
}

StatusOr<const LayerCostTable*> CandidateSearch::Table(int64_t b, Recompute r) {
  auto key = std::make_pair(b, static_cast<int>(r));
  auto it = tables_.find(key);
  if (it == tables_.end()) {
    PW_ASSIGN_OR_RETURN(LayerCostTable t, CostsFor(model_, opt_, b, r));
    std::vector<int64_t> params;
    const int64_t per_param = StaticBytesPerParam(opt_.precision);
    for (LayerCost& l : t.layers) {
      params.push_back(l.static_bytes / per_param);
      if (dp_.distributed_optimizer && dp_.dp_size > 1) l.static_bytes = StaticBytesOfParams(params.back(), dp_);
    }
    it = tables_.emplace(key, std::move(t)).first;
    params_[&it->second] = std::move(params);
  }
  return &it->second;
}

const CandidateSearch::UnitProgram& CandidateSearch::Unit(const ScheduleInfo& family, int v, int m) {
  auto key = std::make_tuple(family.name, v, m);
  auto cached = units_.find(key);
  if (cached != units_.end()) return cached->second;
  const UnitOrders::Order& full = orders_->Full(family, opt_.pp_size, v, m);
  UnitProgram u{full.status, full.stage_to_rank, full.profile, nullptr};
  if (full.status.ok() && family.memory_adaptive) {
    const UnitProgram& one = Least(family, v);
    if (one.status.ok())
      u.least = one.profile;
    else
      u.status = one.status;
  }
  return units_.emplace(key, std::move(u)).first->second;
}

const CandidateSearch::UnitProgram& CandidateSearch::Least(const ScheduleInfo& family, int v) {
  auto key = std::make_pair(family.name, v);
  auto cached = least_.find(key);
  if (cached != least_.end()) return cached->second;
  const UnitOrders::Order& one = orders_->Least(family, opt_.pp_size, v);
  UnitProgram u{one.status, one.stage_to_rank, one.profile, nullptr};
  return least_.emplace(key, std::move(u)).first->second;
}

StatusOr<Boundaries> CandidateSearch::GivenSplit(int S, int L) const {
  Boundaries given;
  if (opt_.layers_per_stage.empty()) return given;
  int sum = 0;
  bool positive = true;
  for (int n : opt_.layers_per_stage) {
    positive = positive && n >= 1;
    sum += n;
  }
  if (static_cast<int>(opt_.layers_per_stage.size()) != S || sum != L || !positive)
    return Status::InvalidArgument("--layers-per-stage has " + std::to_string(opt_.layers_per_stage.size()) +
                                   " counts summing to " + std::to_string(sum) + "; P*v = " + std::to_string(S) +
                                   " stages of " + std::to_string(L) + " layers need " + std::to_string(S) +
                                   " counts >= 1 summing to " + std::to_string(L));
  given.push_back(0);
  for (int n : opt_.layers_per_stage) given.push_back(given.back() + n);
  return given;
}

std::vector<int64_t> CandidateSearch::RankPeaks(const Layout& lay, const MemoryProfile& profile, const Boundaries& b,
                                                std::vector<int64_t>* transient) const {
  const std::vector<int>& s2r = *lay.stage_to_rank;
  StageCosts sc = BuildStageCosts(*lay.table, b, CommModel{});
  std::vector<int64_t> peaks(lay.P, 0);
  transient->assign(lay.P, 0);
  for (int s = 0; s < lay.S; ++s) {
    peaks[s2r[s]] += sc.memory[s].static_bytes;
    (*transient)[s2r[s]] = std::max((*transient)[s2r[s]], SumStage(*lay.table, b[s], b[s + 1]).transient_bytes);
  }
  for (int r = 0; r < lay.P; ++r) peaks[r] += profile.RankDynamicPeak(r, sc.memory) + (*transient)[r];
  return peaks;
}

CandidateSearch::Split CandidateSearch::SplitFor(const Layout& lay, const MemoryProfile& profile,
                                                 const Boundaries& start, bool fixed,
                                                 const StageOverrides& overrides) const {
  Split out;
  out.boundaries = start;
  out.peaks = RankPeaks(lay, profile, out.boundaries, &out.transient);
  out.worst = WorstRank(out.peaks);
  if (out.peaks[out.worst] <= limit_) {
    out.fits = true;
    return out;
  }
  if (fixed) return out;  // --layers-per-stage: no other split
  // v = 1: exact (the rank's walk); v > 1: each stage within limit / v with
  // its own walk peak (a sufficient condition, tried only when the
  // time-optimal split does not fit). Prefix sums make each test
  // O(Pareto points); the largest transient of a range is found by a scan
  // (ranges are short).
  const LayerCostTable& table = *lay.table;
  const int v = lay.v;
  const int64_t limit = limit_;
  StageFits fits = [&, v, limit](int k, int i, int j) {
    const int64_t st = lay.static_prefix[j] - lay.static_prefix[i];
    const int64_t act = lay.act_prefix[j] - lay.act_prefix[i];
    const int64_t wst = lay.stash_prefix[j] - lay.stash_prefix[i];
    int64_t tr = 0;
    for (int l = i; l < j; ++l) tr = std::max(tr, table.layers[l].transient_bytes);
    const int64_t peak = st + tr + profile.StagePeak(k, act, wst);
    return v == 1 ? peak <= limit : peak <= limit / v;
  };
  auto fit_split = PartitionLayers(LayerSeconds(table), lay.S, fits, overrides);
  if (!fit_split.ok()) return out;
  out.fits = true;
  out.boundaries = fit_split->boundaries;
  out.peaks = RankPeaks(lay, profile, out.boundaries, &out.transient);
  out.worst = WorstRank(out.peaks);
  return out;
}

double CandidateSearch::LowerBound(const Layout& lay, const Boundaries& b, const std::vector<int64_t>& transient,
                                   int m) const {
  const std::vector<int>& s2r = *lay.stage_to_rank;
  std::vector<StageSum> sums;
  for (int s = 0; s < lay.S; ++s) sums.push_back(SumStage(*lay.table, b[s], b[s + 1]));
  std::vector<double> busy(lay.P, 0.0);
  std::vector<int64_t> static_of(lay.P, 0);
  for (int s = 0; s < lay.S; ++s) {
    busy[s2r[s]] += m * (sums[s].cost.f + sums[s].cost.B());
    static_of[s2r[s]] += sums[s].memory.static_bytes;
  }
  double bound = *std::max_element(busy.begin(), busy.end());
  if (limit_ == kUnlimitedBytes) return bound;
  double downstream = 0.0;  // sum over s > k of F_s + I_s
  for (int k = lay.S - 1; k >= 0; --k) {
    const int r = s2r[k];
    const int64_t room = limit_ - static_of[r] - transient[r];
    const int64_t act = sums[k].memory.activation;
    if (act > 0 && room >= act) {
      const double chain = downstream + sums[k].cost.i;
      bound = std::max(bound, m * chain / static_cast<double>(room / act));
    }
    downstream += sums[k].cost.f + sums[k].cost.i;
  }
  return bound;
}

bool CandidateSearch::SomeSplitAdmits(const LayerCostTable& table, int S, int m, double step) const {
  if (limit_ == kUnlimitedBytes || !(step > 0) || !std::isfinite(step)) return true;
  const int L = static_cast<int>(table.layers.size());
  std::vector<int64_t> st(L + 1, 0), act(L + 1, 0);
  std::vector<double> fi(L + 1, 0.0), in(L + 1, 0.0);
  for (int l = 0; l < L; ++l) {
    const LayerCost& c = table.layers[l];
    st[l + 1] = st[l] + c.static_bytes;
    act[l + 1] = act[l] + c.activation_bytes;
    fi[l + 1] = fi[l] + c.f + c.i;
    in[l + 1] = in[l] + c.i;
  }
  auto admits = [&](int i, int j) {
    const int64_t room = limit_ - (st[j] - st[i]);
    if (room < 0) return false;
    const int64_t a = act[j] - act[i];
    if (a <= 0) return true;
    const double chain = (fi[L] - fi[j]) + (in[j] - in[i]);
    return static_cast<double>(room / a) >= m * chain / step * (1.0 - 1e-12);
  };
  // lo[j]: the smallest i whose stage [i, j) admits (admits(i, j) holds for
  // every i in [lo[j], j) by monotonicity); j when none does.
  std::vector<int> lo(L + 1, 0);
  for (int j = 1; j <= L; ++j) {
    int a = 0, b = j;  // find the first i in [0, j) with admits(i, j)
    while (a < b) {
      const int mid = (a + b) / 2;
      if (admits(mid, j))
        b = mid;
      else
        a = mid + 1;
    }
    lo[j] = a;
  }
  // reach[j]: layers [0, j) split into k admitted stages.
  std::vector<char> reach(L + 1, 0), next(L + 1, 0);
  std::vector<int> count(L + 2, 0);
  reach[0] = 1;
  for (int k = 0; k < S; ++k) {
    for (int j = 0; j <= L; ++j) count[j + 1] = count[j] + reach[j];
    for (int j = 0; j <= L; ++j) next[j] = j >= 1 && lo[j] < j && count[j] - count[lo[j]] > 0;
    reach.swap(next);
  }
  return reach[L] != 0;
}

bool CandidateSearch::PrunedByBound(Candidate& c, double bound, const char* what) {
  if (!opt_.prune_by_bound) return false;
  const double beat = std::min(opt_.step_cutoff_s, best_step_);
  if (!(bound > beat * (1.0 + 1e-9))) return false;
  char text[320];
  std::snprintf(text, sizeof text,
                "bound: not simulated; %s gives a step of at least %.6g s, the best step found is %.6g s", what, bound,
                beat);
  Reject(c, RejectKind::kBound, text);
  return true;
}

void CandidateSearch::Record(Candidate& c, const Program& lowered, const SimResult& sim,
                             const std::vector<int64_t>& transient) const {
  c.simulated = true;
  c.makespan_s = sim.makespan_s;
  c.steady_step_s = sim.steady_step_s;
  c.bubble_ratio = sim.bubble_ratio;
  c.step_s = opt_.objective == Objective::kMakespan ? sim.makespan_s : sim.steady_step_s;
  c.reduce_s = 0;
  double last_compute = 0;
  for (int r = 0; r < lowered.pp_size; ++r) {
    double sum = 0;
    for (size_t i = 0; i < lowered.ranks[r].size(); ++i)
      if (IsReduceGrad(lowered.ranks[r][i].type)) sum += sim.timing[r][i].end - sim.timing[r][i].start;
    c.reduce_s = std::max(c.reduce_s, sum);
    last_compute = std::max(last_compute, sim.per_rank[r].last_compute_end_s);
  }
  c.reduce_exposed_s = std::max(0.0, sim.makespan_s - last_compute);
  c.peak_bytes.clear();
  c.static_bytes.clear();
  c.max_peak_bytes = 0;
  for (int r = 0; r < lowered.pp_size; ++r) {
    c.peak_bytes.push_back(sim.per_rank[r].peak_memory_bytes + transient[r]);
    c.static_bytes.push_back(sim.per_rank[r].start_memory_bytes);
    c.max_peak_bytes = std::max(c.max_peak_bytes, c.peak_bytes.back());
  }
}

void CandidateSearch::Evaluate(Candidate& c, const ScheduleInfo& family, Recompute rc,
                               const StageOverrides& overrides) {
  Layout lay;
  lay.P = opt_.pp_size;
  lay.v = c.virtual_stages;
  lay.S = lay.P * lay.v;
  auto table_or = Table(c.batch.micro_batch_size, rc);
  if (!table_or.ok()) {
    Reject(c, RejectKind::kCosts, "costs: " + table_or.status().message());
    return;
  }
  lay.table = *table_or;
  const LayerCostTable& table = *lay.table;
  lay.L = static_cast<int>(table.layers.size());
  if (lay.S > lay.L) {
    Reject(c, RejectKind::kRequest,
           "S = P*v = " + std::to_string(lay.S) + " stages > " + std::to_string(lay.L) + " layers");
    return;
  }
  StatusOr<Boundaries> given = GivenSplit(lay.S, lay.L);
  if (!given.ok()) {
    Reject(c, RejectKind::kRequest, given.status().message());
    return;
  }
  if (opt_.prune_by_bound) {
    // Any split: the busiest rank works at least the average.
    double total = 0.0;
    for (const LayerCost& l : table.layers) total += l.f + (l.b >= 0 ? l.b : l.i + l.w);
    if (PrunedByBound(c, c.batch.num_microbatches * total / lay.P, "the compute per rank")) return;
    // Memory: no split lets enough microbatches be in flight for a step
    // below the one to beat (Little's law, SomeSplitAdmits).
    const double beat = std::min(opt_.step_cutoff_s, best_step_);
    if (std::isfinite(beat) && given->empty() && !overrides.first_stage_end && !overrides.last_stage_begin &&
        !SomeSplitAdmits(table, lay.S, c.batch.num_microbatches, beat)) {
      char text[320];
      std::snprintf(text, sizeof text,
                    "bound: not simulated; no split into %d stages holds the microbatches in flight that a step "
                    "below %.6g s needs (Little's law on memory)",
                    lay.S, beat);
      Reject(c, RejectKind::kBound, text);
      return;
    }
  }
  const UnitProgram& least = Least(family, lay.v);
  if (!least.status.ok()) {
    Reject(c, RejectKind::kSchedule, "generator: " + least.status.ToString());
    return;
  }
  lay.stage_to_rank = &least.stage_to_rank;
  lay.static_prefix.assign(lay.L + 1, 0);
  lay.act_prefix.assign(lay.L + 1, 0);
  lay.stash_prefix.assign(lay.L + 1, 0);
  for (int l = 0; l < lay.L; ++l) {
    lay.static_prefix[l + 1] = lay.static_prefix[l] + table.layers[l].static_bytes;
    lay.act_prefix[l + 1] = lay.act_prefix[l] + table.layers[l].activation_bytes;
    lay.stash_prefix[l + 1] = lay.stash_prefix[l] + table.layers[l].wstash_bytes;
  }
  // Partition: the given split, or the time-optimal one first; with a limit
  // and v = 1 the exact memory-aware DP; for v > 1 the time-optimal split if
  // it fits, else the sufficient per-stage budget.
  StatusOr<Partition> start = given->empty() ? PartitionLayers(LayerSeconds(table), lay.S, {}, overrides)
                                             : StatusOr<Partition>(Partition{*given, {}, 0.0});
  if (!start.ok()) {
    const std::string why = start.status().message();
    Reject(c, why.rfind("cannot split", 0) == 0 ? RejectKind::kRequest : RejectKind::kSchedule, "partition: " + why);
    return;
  }
  // No order holds less than one microbatch in flight: a split that does
  // not fit that walk rejects the candidate before its m-microbatch order is
  // generated (the same outcome as below, found at the cost of a partition;
  // it makes a search over many P that do not fit fast).
  const bool fixed = !given->empty();
  auto reject_split = [&](const Split& split, bool at_least) {
    const int worst = split.worst;
    c.boundaries = split.boundaries;
    c.max_peak_bytes = split.peaks[worst];
    const int64_t st = SumStaticOfRank(table, split.boundaries, *lay.stage_to_rank, worst);
    Reject(c, RejectKind::kMemory,
           "memory: no split into " + std::to_string(lay.S) + " stages fits " + FormatBytes(limit_) + " per rank" +
               (at_least ? " even with one microbatch in flight (the least " + family.display_name + " can hold)"
                         : std::string()) +
               "; the time-optimal split (" + FormatStageSizes(split.boundaries) + " layers) needs " +
               FormatBytes(split.peaks[worst]) + " on rank " + std::to_string(worst) + " (static " + FormatBytes(st) +
               ", activations+stash+workspace " + FormatBytes(split.peaks[worst] - st) + ")");
  };
  if (limit_ != kUnlimitedBytes) {
    const Split floor = SplitFor(lay, *least.profile, start->boundaries, fixed, overrides);
    if (!floor.fits) {
      reject_split(floor, true);
      return;
    }
  }
  const UnitProgram& unit = Unit(family, lay.v, c.batch.num_microbatches);
  if (!unit.status.ok()) {
    Reject(c, RejectKind::kSchedule, "generator: " + unit.status.ToString());
    return;
  }
  lay.stage_to_rank = &unit.stage_to_rank;
  // A memory-adaptive family first gets a split that fits the order it
  // prefers; if none does, one that fits one microbatch in flight, and its
  // generator fits its order to the room left on each rank.
  Split split = SplitFor(lay, *unit.profile, start->boundaries, fixed, overrides);
  const bool adaptive = unit.least != nullptr;
  if (!split.fits && adaptive) split = SplitFor(lay, *unit.least, start->boundaries, fixed, overrides);
  c.boundaries = split.boundaries;
  if (!split.fits) {
    reject_split(split, adaptive);
    return;
  }
  if (opt_.prune_by_bound &&
      PrunedByBound(c, LowerBound(lay, split.boundaries, split.transient, c.batch.num_microbatches),
                    "the busiest rank's compute or its memory (Little's law)"))
    return;
  Simulate(c, family, lay, unit, split);
  if (c.feasible) best_step_ = std::min(best_step_, c.step_s);
}

void CandidateSearch::Simulate(Candidate& c, const ScheduleInfo& family, const Layout& lay, const UnitProgram& unit,
                               const Split& split) {
  const LayerCostTable& table = *lay.table;
  const std::vector<int>& s2r = unit.stage_to_rank;
  const Boundaries& chosen = split.boundaries;
  // Generate with the real costs and run the chain. A memory-adaptive
  // generator gets each rank's room for activations (the limit less the
  // rank's static bytes and workspace) and fits its order to it. A fixed
  // order ignores the limit: it is not passed, and the simulated peak is
  // checked below (one check, with the predictions kept for the table).
  const bool adaptive = unit.least != nullptr;
  ScheduleRequest req;
  req.schedule = family.name;
  req.pp_size = lay.P;
  req.num_microbatches = c.batch.num_microbatches;
  req.virtual_stages = lay.v;
  req.costs = BuildStageCosts(table, chosen, table.comm.value_or(CommModel{}));
  // Data parallel: each stage's REDUCE_GRAD time and gradient buffer.
  req.dp_size = dp_.dp_size;
  if (dp_.dp_size > 1) {
    const std::vector<int64_t>& params = LayerParams(lay.table);
    for (int s = 0; s < lay.S; ++s) {
      int64_t n = 0;
      for (int l = chosen[s]; l < chosen[s + 1]; ++l) n += params[l];
      req.costs.stages[s].reduce_grad = StageReduceSeconds(n, dp_);
      req.costs.memory[s].reduce_buffer = ReduceBufferBytes(n, dp_);
      // ZeRO-1: each rank steps its 1/D shard of the optimizer state.
      if (dp_.distributed_optimizer) req.costs.stages[s].optimizer /= dp_.dp_size;
    }
  }
  if (limit_ != kUnlimitedBytes && adaptive) {
    std::vector<int64_t> static_of(lay.P, 0);
    for (int s = 0; s < lay.S; ++s) static_of[s2r[s]] += req.costs.memory[s].static_bytes;
    for (int r = 0; r < lay.P; ++r) {
      const int64_t room = std::max<int64_t>(limit_ - static_of[r] - split.transient[r], 0);
      req.rank_memory_limits.push_back(static_cast<double>(room));
    }
  }
  PipelineFailure failure;
  StatusOr<PipelineResult> run = RunPipeline(req, &failure);
  if (!run.ok()) {
    if (failure.step == PipelineStep::kGenerate && failure.status.code() == StatusCode::kInfeasible &&
        HasMemoryLimit(req)) {
      // The generator found no order within the room: a memory rejection,
      // with the least any order needs (one microbatch in flight).
      std::vector<int64_t> tr;
      const std::vector<int64_t> least = RankPeaks(lay, adaptive ? *unit.least : *unit.profile, chosen, &tr);
      const int w = WorstRank(least);
      c.max_peak_bytes = least[w];
      const int64_t st = SumStaticOfRank(table, chosen, s2r, w);
      Reject(c, RejectKind::kMemory,
             "memory: " + family.display_name + " finds no order within " + FormatBytes(limit_) + " per rank (split " +
                 FormatStageSizes(chosen) + " layers; one microbatch in flight needs " + FormatBytes(least[w]) +
                 " on rank " + std::to_string(w) + ", static " + FormatBytes(st) +
                 "): " + FirstLine(failure.status.message()));
      return;
    }
    Reject(c, RejectKind::kSchedule,
           std::string(PipelineStepName(failure.step)) + ": " + FirstLine(failure.status.ToString()));
    return;
  }
  Record(c, run->lowered, run->sim, split.transient);
  const int w = WorstRank(c.peak_bytes);
  if (c.peak_bytes[w] > limit_) {
    Reject(c, RejectKind::kMemory,
           "memory: rank " + std::to_string(w) + " peak " + FormatBytes(c.peak_bytes[w]) + " > --memory-limit " +
               FormatBytes(limit_) + " (static " + FormatBytes(c.static_bytes[w]) + ", activations+stash+workspace " +
               FormatBytes(c.peak_bytes[w] - c.static_bytes[w]) + ")");
    return;
  }
  c.feasible = true;
  auto art = std::make_shared<CandidateArtifacts>();
  art->lowered = std::move(run->lowered);
  art->costs = std::move(req.costs);
  art->sim = std::move(run->sim);
  art->table = table;
  c.artifacts = std::move(art);
}

}  // namespace pw
