#include "planner/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "planner/explain.h"
#include "planner/memory_profile.h"
#include "planner/partition.h"
#include "schedules/pipeline.h"
#include "schedules/registry.h"

namespace pw {

const char* ObjectiveField(Objective o) { return o == Objective::kMakespan ? "makespan_s" : "steady_step_s"; }

StatusOr<Objective> ParseObjective(const std::string& text) {
  if (text == "makespan") return Objective::kMakespan;
  if (text == "steady") return Objective::kSteady;
  return Status::InvalidArgument("--objective must be makespan or steady, got '" + text + "'");
}

StatusOr<LayerCostTable> CostsFor(const PlannerModel& model, const PlannerOptions& o, int64_t b, Recompute r) {
  if (model.profile) {
    if (r != Recompute::kNone)
      return Status::InvalidArgument("the profile was measured without recompute; --recompute-granularity " +
                                     std::string(RecomputeName(r)) + " needs other costs");
    const int64_t s = o.seq_length > 0 ? o.seq_length : model.profile->seq_length;
    PW_ASSIGN_OR_RETURN(LayerCostTable t,
                        ProfileLayerCosts(*model.profile, model.config ? model.config->raw : model.profile->model, b, s));
    if (!t.comm && model.device) t.comm = model.device->Comm();
    return t;
  }
  if (model.table) {
    const LayerCostTable& t = *model.table;
    if (t.recompute != RecomputeName(r))
      return Status::InvalidArgument("the layer-cost file was made with recompute '" + t.recompute +
                                     "'; --recompute-granularity " + RecomputeName(r) + " needs other costs");
    if (t.micro_batch_size > 0 && t.micro_batch_size != b)
      return Status::InvalidArgument("the layer-cost file was made for micro-batch size " +
                                     std::to_string(t.micro_batch_size) + "; --micro-batch-size " + std::to_string(b) +
                                     " needs other costs");
    LayerCostTable copy = t;
    if (!copy.comm && model.device) copy.comm = model.device->Comm();
    return copy;
  }
  if (!model.config) return Status::InvalidArgument("no model: give --model-config");
  if (!model.device) return Status::InvalidArgument("a HF model config needs --device");
  TrainingShape shape;
  shape.micro_batch_size = b;
  shape.seq_length = o.seq_length > 0 ? o.seq_length : model.config->max_positions;
  shape.recompute = r;
  shape.precision = o.precision;
  return BuildLayerCosts(*model.config, *model.device, shape);
}

const char* RejectKindName(RejectKind kind) {
  switch (kind) {
    case RejectKind::kNone: return "";
    case RejectKind::kRequest: return "request";
    case RejectKind::kMemory: return "memory";
    case RejectKind::kCosts: return "costs";
    case RejectKind::kSchedule: return "schedule";
  }
  return "?";
}

namespace {

void Reject(Candidate& c, RejectKind kind, std::string reason) {
  c.reject = kind;
  c.reason = std::move(reason);
}

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

struct Search {
  const PlannerModel& model;
  const PlannerOptions& opt;
  int64_t limit = kUnlimited;
  std::map<std::pair<int64_t, int>, LayerCostTable> tables;  // (b, recompute) -> costs
  // Unit-cost programs of fixed shape (schedule, v, m): their memory walk is
  // shared by every b and recompute.
  struct UnitProgram {
    Status status;
    std::vector<int> stage_to_rank;
    std::shared_ptr<const MemoryProfile> profile;  // the family's order with no memory limit
    std::shared_ptr<const MemoryProfile> least;    // memory-adaptive families: OneMicrobatchOrder
  };
  std::map<std::tuple<std::string, int, int>, UnitProgram> units;

  StatusOr<const LayerCostTable*> Table(int64_t b, Recompute r) {
    auto key = std::make_pair(b, static_cast<int>(r));
    auto it = tables.find(key);
    if (it == tables.end()) {
      PW_ASSIGN_OR_RETURN(LayerCostTable t, CostsFor(model, opt, b, r));
      it = tables.emplace(key, std::move(t)).first;
    }
    return &it->second;
  }

  std::string LimitText() const { return FormatBytes(limit); }

  // Fills c.* from a simulation of `lowered`.
  void Record(Candidate& c, const Program& lowered, const StageCosts& costs, const SimResult& sim,
              const std::vector<int64_t>& transient) {
    c.simulated = true;
    c.makespan_s = sim.makespan_s;
    c.steady_step_s = sim.steady_step_s;
    c.bubble_ratio = sim.bubble_ratio;
    c.step_s = opt.objective == Objective::kMakespan ? sim.makespan_s : sim.steady_step_s;
    c.peak_bytes.clear();
    c.static_bytes.clear();
    c.max_peak_bytes = 0;
    for (int r = 0; r < lowered.pp_size; ++r) {
      c.peak_bytes.push_back(sim.per_rank[r].peak_memory_bytes + transient[r]);
      c.static_bytes.push_back(sim.per_rank[r].start_memory_bytes);
      c.max_peak_bytes = std::max(c.max_peak_bytes, c.peak_bytes.back());
    }
  }

  // Evaluates one candidate (schedule, v, batch, recompute) of `family` in place.
  void Evaluate(Candidate& c, const ScheduleInfo& family, Recompute rc, const StageOverrides& overrides) {
    const int P = opt.pp_size, v = c.virtual_stages, S = P * v, m = c.batch.num_microbatches;
    auto table_or = Table(c.batch.micro_batch_size, rc);
    if (!table_or.ok()) {
      Reject(c, RejectKind::kCosts, "costs: " + table_or.status().message());
      return;
    }
    const LayerCostTable& table = **table_or;
    const int L = static_cast<int>(table.layers.size());
    if (S > L) {
      Reject(c, RejectKind::kRequest, "S = P*v = " + std::to_string(S) + " stages > " + std::to_string(L) + " layers");
      return;
    }
    // --layers-per-stage: the split is given.
    Boundaries given;
    if (!opt.layers_per_stage.empty()) {
      int sum = 0;
      bool positive = true;
      for (int n : opt.layers_per_stage) {
        positive = positive && n >= 1;
        sum += n;
      }
      if (static_cast<int>(opt.layers_per_stage.size()) != S || sum != L || !positive) {
        Reject(c, RejectKind::kRequest,
               "--layers-per-stage has " + std::to_string(opt.layers_per_stage.size()) + " counts summing to " +
                   std::to_string(sum) + "; P*v = " + std::to_string(S) + " stages of " + std::to_string(L) +
                   " layers need " + std::to_string(S) + " counts >= 1 summing to " + std::to_string(L));
        return;
      }
      given.push_back(0);
      for (int n : opt.layers_per_stage) given.push_back(given.back() + n);
    }
    // The order of a fixed-order family does not depend on costs; its unit
    // program gives the memory walk for the partitioner. A memory-adaptive
    // family (zb-auto, zb-v) changes its order to fit the limit: its unit
    // program (no limit) is the order it prefers, and the walk of one
    // microbatch in flight (OneMicrobatchOrder) the least it can run in.
    ScheduleRequest unit;
    unit.schedule = c.schedule;
    unit.pp_size = P;
    unit.num_microbatches = m;
    unit.virtual_stages = v;
    auto key = std::make_tuple(c.schedule, v, m);
    auto cached = units.find(key);
    if (cached == units.end()) {
      auto prog = GenerateSchedule(unit);
      UnitProgram u{prog.ok() ? Status::Ok() : prog.status(), {}, nullptr, nullptr};
      if (prog.ok()) {
        u.profile = std::make_shared<const MemoryProfile>(*prog);
        u.stage_to_rank = prog->stage_to_rank;
        if (family.memory_adaptive) {
          auto one = OneMicrobatchOrder(unit);
          if (one.ok())
            u.least = std::make_shared<const MemoryProfile>(*one);
          else
            u.status = one.status();
        }
      }
      cached = units.emplace(key, std::move(u)).first;
    }
    if (!cached->second.status.ok()) {
      Reject(c, RejectKind::kSchedule, "generator: " + cached->second.status.ToString());
      return;
    }
    const std::vector<int>& s2r = cached->second.stage_to_rank;
    const std::vector<double> seconds = LayerSeconds(table);
    std::vector<int64_t> static_prefix(L + 1, 0), act_prefix(L + 1, 0), stash_prefix(L + 1, 0);
    for (int l = 0; l < L; ++l) {
      static_prefix[l + 1] = static_prefix[l] + table.layers[l].static_bytes;
      act_prefix[l + 1] = act_prefix[l] + table.layers[l].activation_bytes;
      stash_prefix[l + 1] = stash_prefix[l] + table.layers[l].wstash_bytes;
    }
    // Per-rank peak of split `b` under the memory walk `profile`: static +
    // the walk's peak + the largest recompute workspace of the rank's stages.
    auto rank_peaks = [&](const MemoryProfile& profile, const Boundaries& b, std::vector<int64_t>* transient) {
      StageCosts sc = BuildStageCosts(table, b, CommModel{});
      std::vector<int64_t> peaks(P, 0);
      transient->assign(P, 0);
      for (int s = 0; s < S; ++s) {
        peaks[s2r[s]] += sc.memory[s].static_bytes;
        (*transient)[s2r[s]] = std::max((*transient)[s2r[s]], SumStage(table, b[s], b[s + 1]).transient_bytes);
      }
      for (int r = 0; r < P; ++r) peaks[r] += profile.RankDynamicPeak(r, sc.memory) + (*transient)[r];
      return peaks;
    };
    // Partition: time-optimal first; with a limit and v = 1 the exact
    // memory-aware DP; for v > 1 the time-optimal split if it fits, else the
    // sufficient per-stage budget.
    StatusOr<Partition> free_split = given.empty() ? PartitionLayers(seconds, S, {}, overrides)
                                                   : StatusOr<Partition>(Partition{given, {}, 0.0});
    if (!free_split.ok()) {
      const std::string why = free_split.status().message();
      Reject(c, why.rfind("cannot split", 0) == 0 ? RejectKind::kRequest : RejectKind::kSchedule, "partition: " + why);
      return;
    }
    struct Split {
      bool fits = false;
      Boundaries boundaries;
      std::vector<int64_t> peaks, transient;
      int worst = 0;  // the rank with the largest peak
    };
    // The split for memory walk `profile`: the time-optimal one if it fits,
    // else a memory-aware one; if none fits, the time-optimal one with
    // fits = false.
    auto split_for = [&](const MemoryProfile& profile) {
      Split out;
      out.boundaries = free_split->boundaries;
      out.peaks = rank_peaks(profile, out.boundaries, &out.transient);
      out.worst = static_cast<int>(std::max_element(out.peaks.begin(), out.peaks.end()) - out.peaks.begin());
      if (out.peaks[out.worst] <= limit) {
        out.fits = true;
        return out;
      }
      if (!given.empty()) return out;  // --layers-per-stage: no other split
      // v = 1: exact (the rank's walk); v > 1: each stage within limit / v
      // with its own walk peak (a sufficient condition, tried only when the
      // time-optimal split does not fit).
      // Prefix sums make each test O(Pareto points); the largest transient of
      // a range is found by a scan (ranges are short).
      StageFits fits = [&, v](int k, int i, int j) {
        const int64_t st = static_prefix[j] - static_prefix[i];
        const int64_t act = act_prefix[j] - act_prefix[i];
        const int64_t wst = stash_prefix[j] - stash_prefix[i];
        int64_t tr = 0;
        for (int l = i; l < j; ++l) tr = std::max(tr, table.layers[l].transient_bytes);
        const int64_t peak = st + tr + profile.StagePeak(k, act, wst);
        return v == 1 ? peak <= limit : peak <= limit / v;
      };
      auto fit_split = PartitionLayers(seconds, S, fits, overrides);
      if (!fit_split.ok()) return out;
      out.fits = true;
      out.boundaries = fit_split->boundaries;
      out.peaks = rank_peaks(profile, out.boundaries, &out.transient);
      out.worst = static_cast<int>(std::max_element(out.peaks.begin(), out.peaks.end()) - out.peaks.begin());
      return out;
    };
    // A memory-adaptive family first gets a split that fits the order it
    // prefers; if none does, one that fits one microbatch in flight, and its
    // generator fits its order to the room left on each rank.
    Split split = split_for(*cached->second.profile);
    const bool adaptive = cached->second.least != nullptr;
    if (!split.fits && adaptive) split = split_for(*cached->second.least);
    if (!split.fits) {
      const Boundaries& chosen = split.boundaries;
      const int worst = split.worst;
      c.boundaries = chosen;
      c.max_peak_bytes = split.peaks[worst];
      const int64_t st = SumStaticOfRank(table, chosen, s2r, worst);
      c.reject = RejectKind::kMemory;
      c.reason = "memory: no split into " + std::to_string(S) + " stages fits " + LimitText() + " per rank" +
                 (adaptive ? " even with one microbatch in flight (the least " + family.display_name + " can hold)"
                           : std::string()) +
                 "; the time-optimal split (" + FormatStageSizes(chosen) + " layers) needs " +
                 FormatBytes(split.peaks[worst]) + " on rank " + std::to_string(worst) + " (static " +
                 FormatBytes(st) + ", activations+stash+workspace " + FormatBytes(split.peaks[worst] - st) + ")";
      return;
    }
    const Boundaries chosen = split.boundaries;
    const std::vector<int64_t>& transient = split.transient;
    c.boundaries = chosen;
    // Generate with the real costs, validate, lower, validate, simulate. A
    // memory-adaptive generator gets each rank's room for activations (the
    // limit less the rank's static bytes and workspace) and fits its order
    // to it. A fixed order ignores the limit: it is not passed, and the
    // simulated peak is checked below (one check, with the predictions kept
    // for the candidate table).
    const CommModel comm = table.comm.value_or(CommModel{});
    ScheduleRequest req = unit;
    req.costs = BuildStageCosts(table, chosen, comm);
    if (limit != kUnlimited && adaptive) {
      std::vector<int64_t> static_of(P, 0);
      for (int s = 0; s < S; ++s) static_of[s2r[s]] += req.costs.memory[s].static_bytes;
      for (int r = 0; r < P; ++r) {
        const int64_t room = std::max<int64_t>(limit - static_of[r] - transient[r], 0);
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
        const MemoryProfile& bound = adaptive ? *cached->second.least : *cached->second.profile;
        const std::vector<int64_t> least = rank_peaks(bound, chosen, &tr);
        const int w = static_cast<int>(std::max_element(least.begin(), least.end()) - least.begin());
        c.max_peak_bytes = least[w];
        const int64_t st = SumStaticOfRank(table, chosen, s2r, w);
        Reject(c, RejectKind::kMemory,
               "memory: " + family.display_name + " finds no order within " + LimitText() + " per rank (split " +
                   FormatStageSizes(chosen) + " layers; one microbatch in flight needs " + FormatBytes(least[w]) +
                   " on rank " + std::to_string(w) + ", static " + FormatBytes(st) +
                   "): " + FirstLine(failure.status.message()));
        return;
      }
      Reject(c, RejectKind::kSchedule,
             std::string(PipelineStepName(failure.step)) + ": " + FirstLine(failure.status.ToString()));
      return;
    }
    const Program& lowered = run->lowered;
    const SimResult& sim = run->sim;
    Record(c, lowered, req.costs, sim, transient);
    const int w = static_cast<int>(std::max_element(c.peak_bytes.begin(), c.peak_bytes.end()) - c.peak_bytes.begin());
    if (c.peak_bytes[w] > limit) {
      c.reject = RejectKind::kMemory;
      c.reason = "memory: rank " + std::to_string(w) + " peak " + FormatBytes(c.peak_bytes[w]) + " > --memory-limit " +
                 LimitText() + " (static " + FormatBytes(c.static_bytes[w]) + ", activations+stash+workspace " +
                 FormatBytes(c.peak_bytes[w] - c.static_bytes[w]) + ")";
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

  static int64_t SumStaticOfRank(const LayerCostTable& t, const Boundaries& b, const std::vector<int>& s2r, int r) {
    int64_t st = 0;
    for (size_t s = 0; s + 1 < b.size(); ++s)
      if (s2r[s] == r) st += SumStage(t, b[s], b[s + 1]).memory.static_bytes;
    return st;
  }

  static std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }
};

// The schedules to search, validated.
StatusOr<std::vector<ScheduleInfo>> Families(const PlannerOptions& o) {
  std::vector<ScheduleInfo> out;
  std::vector<std::string> names = o.schedules;
  if (names.empty() || (names.size() == 1 && names[0] == "auto")) names = ScheduleNames();
  for (const std::string& n : names) {
    PW_ASSIGN_OR_RETURN(ScheduleInfo info, FindSchedule(n));
    if (std::none_of(out.begin(), out.end(), [&](const ScheduleInfo& i) { return i.name == info.name; }))
      out.push_back(info);
  }
  return out;
}

std::vector<Recompute> RecomputeOptions(const PlannerModel& model, const PlannerOptions& o) {
  if (o.recompute) return {*o.recompute};
  if (model.profile) return {Recompute::kNone};  // measured without recompute
  if (model.table) {
    auto r = ParseRecompute(model.table->recompute);
    return {r.ok() ? *r : Recompute::kNone};
  }
  return {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
}

}  // namespace

StatusOr<SearchResult> EvaluateCandidates(const PlannerModel& model, const PlannerOptions& o) {
  if (o.pp_size < 1) return Status::InvalidArgument("--pp must be >= 1, got " + std::to_string(o.pp_size));
  if (o.virtual_stages && *o.virtual_stages < 1)
    return Status::InvalidArgument("--num-virtual-stages-per-pipeline-rank must be >= 1, got " +
                                   std::to_string(*o.virtual_stages));
  if (o.seq_length < 0) return Status::InvalidArgument("--seq-length must be >= 1, got " + std::to_string(o.seq_length));
  if (o.max_virtual_stages < 1)
    return Status::InvalidArgument("--max-virtual-stages must be >= 1, got " + std::to_string(o.max_virtual_stages));
  if (o.seq_length > 0 && model.config && model.config->max_positions > 0 &&
      o.seq_length > model.config->max_positions)
    return Status::InvalidArgument(
        "--seq-length " + std::to_string(o.seq_length) + " is more than the model's " +
        (model.config->family == ModelFamily::kGpt2 ? "n_positions" : "max_position_embeddings") + " (" +
        std::to_string(model.config->max_positions) + "): its position embeddings do not reach that far");
  PW_ASSIGN_OR_RETURN(std::vector<ScheduleInfo> families, Families(o));
  PW_ASSIGN_OR_RETURN(std::vector<BatchSplit> batches, ResolveBatch(o));
  if (batches.empty())
    return Status::InvalidArgument("--global-batch-size " + std::to_string(*o.global_batch_size) +
                                   " is not divisible by any micro-batch size tried (1, 2, 4, 8); give --micro-batch-size");
  const std::vector<Recompute> recomputes = RecomputeOptions(model, o);
  Search search{model, o, kUnlimited, {}, {}};
  if (o.memory_limit_bytes) {
    if (*o.memory_limit_bytes <= 0)
      return Status::InvalidArgument("--memory-limit must be > 0, got " + std::to_string(*o.memory_limit_bytes));
    search.limit = *o.memory_limit_bytes;
  } else if (model.device) {
    search.limit = model.device->memory_bytes;
  }
  // Flag errors first (they hold for every candidate): the layer count and
  // the first/last-stage overrides at the smallest S = P.
  PW_ASSIGN_OR_RETURN(const LayerCostTable* probe, search.Table(batches[0].micro_batch_size, recomputes[0]));
  const int L = static_cast<int>(probe->layers.size());
  if (o.pp_size > L)
    return Status::InvalidArgument("--pp " + std::to_string(o.pp_size) + " is more than the model's " +
                                   std::to_string(L) + " layers (embedding + blocks + head): a stage cannot be empty");
  PW_RETURN_IF_ERROR(
      ResolveStageOverrides(*probe, o.pp_size, o.first_stage_num_layers, o.last_stage_num_layers).status());

  SearchResult result;
  result.objective = o.objective;
  result.pp_size = o.pp_size;
  if (search.limit != kUnlimited) result.memory_limit_bytes = search.limit;
  std::vector<Candidate> all;
  for (const ScheduleInfo& f : families) {
    std::vector<int> vs;
    if (o.virtual_stages) {
      vs.push_back(*o.virtual_stages);
    } else {
      // v = 1 of a multi-stage family (default v > 1) is its single-stage
      // parent (interleaved-1f1b at v = 1 is 1f1b): not searched twice.
      int lo = std::max(f.min_virtual_stages, f.default_virtual_stages > 1 ? 2 : 1);
      int hi = f.max_virtual_stages > 0 ? f.max_virtual_stages : o.max_virtual_stages;
      hi = std::min(hi, o.max_virtual_stages);
      for (int v = lo; v <= hi; ++v) vs.push_back(v);
      if (vs.empty()) {
        // The family's smallest v is above the bound: one rejection says so.
        Candidate c;
        c.schedule = f.name;
        c.virtual_stages = lo;
        c.batch = batches[0];
        c.recompute = RecomputeName(recomputes[0]);
        c.reject = RejectKind::kRequest;
        c.reason = "--max-virtual-stages " + std::to_string(o.max_virtual_stages) + ": " + f.display_name +
                   " needs v >= " + std::to_string(lo);
        all.push_back(std::move(c));
        continue;
      }
    }
    for (int v : vs)
      for (const BatchSplit& b : batches)
        for (Recompute rc : recomputes) {
          Candidate c;
          c.schedule = f.name;
          c.virtual_stages = v;
          c.batch = b;
          c.recompute = RecomputeName(rc);
          if (v < f.min_virtual_stages || (f.max_virtual_stages > 0 && v > f.max_virtual_stages)) {
            c.reject = RejectKind::kRequest;
            c.reason = f.display_name + " needs v in [" + std::to_string(f.min_virtual_stages) + ", " +
                       (f.max_virtual_stages > 0 ? std::to_string(f.max_virtual_stages) : std::string("inf")) +
                       "], --num-virtual-stages-per-pipeline-rank is " + std::to_string(v);
          } else {
            auto tab = search.Table(b.micro_batch_size, rc);
            if (!tab.ok()) {
              Reject(c, RejectKind::kCosts, "costs: " + tab.status().message());
            } else {
              auto ov = ResolveStageOverrides(**tab, o.pp_size * v, o.first_stage_num_layers, o.last_stage_num_layers);
              if (!ov.ok())
                Reject(c, RejectKind::kRequest, ov.status().message());
              else
                search.Evaluate(c, f, rc, *ov);
            }
          }
          all.push_back(std::move(c));
        }
  }
  // Rank: feasible by (step, max peak, search order); then rejected in search order.
  std::vector<size_t> order(all.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Candidate &x = all[a], &y = all[b];
    if (x.feasible != y.feasible) return x.feasible;
    if (!x.feasible) return false;
    if (x.step_s != y.step_s) return x.step_s < y.step_s;
    return x.max_peak_bytes < y.max_peak_bytes;
  });
  for (size_t k : order) result.candidates.push_back(std::move(all[k]));
  if (!result.candidates.empty() && result.candidates[0].feasible) result.chosen = 0;
  // Only the chosen candidate keeps its program and simulation.
  for (size_t k = 1; k < result.candidates.size(); ++k) result.candidates[k].artifacts.reset();
  return result;
}

StatusOr<MinPipeline> FindSmallestPipeline(const PlannerModel& model, const PlannerOptions& options, int max_pp) {
  MinPipeline out;
  std::string previous;
  // Lower bound: every byte of static state (params + grads + optimizer)
  // lives on some rank, so P * limit >= total static bytes; smaller P are
  // skipped with that reason.
  int first = 1;
  std::optional<int64_t> limit = options.memory_limit_bytes;
  if (!limit && model.device) limit = model.device->memory_bytes;
  if (limit) {
    Recompute rc = model.profile ? Recompute::kNone : Recompute::kFull;
    if (model.table) {
      auto parsed = ParseRecompute(model.table->recompute);
      rc = parsed.ok() ? *parsed : Recompute::kNone;
    }
    auto t = CostsFor(model, options, options.micro_batch_size.value_or(1), rc);
    if (t.ok()) {
      int64_t total = 0;
      for (const LayerCost& l : t->layers) total += l.static_bytes;
      const int64_t lb = (total + *limit - 1) / *limit;
      if (lb > 1) {
        first = static_cast<int>(std::min<int64_t>(lb, max_pp + 1));
        previous = "static bytes (params + grads + optimizer state) total " + FormatBytes(total) + " > " +
                   std::to_string(first - 1) + " x " + FormatBytes(*limit);
      }
    }
  }
  for (int P = first; P <= max_pp; ++P) {
    PlannerOptions o = options;
    o.pp_size = P;
    o.recompute = Recompute::kFull;
    if (model.table || model.profile) o.recompute.reset();  // a cost file / profile fixes its own recompute
    o.find_min_pp = false;
    if (o.first_stage_num_layers || o.last_stage_num_layers) {
      o.first_stage_num_layers.reset();
      o.last_stage_num_layers.reset();
    }
    auto r = EvaluateCandidates(model, o);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kInvalidArgument && P > 1) break;  // e.g. P > layers
      return r.status();
    }
    if (r->chosen >= 0) {
      out.pp_size = P;
      out.smaller_reason = previous;
      return out;
    }
    // The closest rejection: a memory one with the smallest peak, else the first.
    const Candidate* best = nullptr;
    for (const Candidate& c : r->candidates) {
      if (c.reject != RejectKind::kMemory) continue;
      if (!best || (c.max_peak_bytes > 0 && c.max_peak_bytes < best->max_peak_bytes)) best = &c;
    }
    if (!best && !r->candidates.empty()) best = &r->candidates.front();
    previous = best ? best->schedule + " v=" + std::to_string(best->virtual_stages) +
                          " b=" + std::to_string(best->batch.micro_batch_size) + " recompute=" + best->recompute +
                          ": " + best->reason
                    : "";
  }
  out.smaller_reason = previous;
  return out;
}

namespace {

}  // namespace

StatusOr<SearchResult> SearchPlans(const PlannerModel& model, const PlannerOptions& options) {
  if (options.clip_grad_norm > 0 && options.objective == Objective::kSteady)
    return Status::InvalidArgument(
        "--clip-grad-norm with --objective steady: clipping by the global norm puts a barrier at the end of every "
        "step, so the step time is makespan_s, not steady_step_s (PLAN_FORMAT rule 9); use --objective makespan");
  PW_ASSIGN_OR_RETURN(SearchResult r, EvaluateCandidates(model, options));
  // Every candidate refused by the request itself: bad input, and no other
  // P helps (the smallest-P search is skipped).
  const bool all_invalid = r.chosen < 0 && !r.candidates.empty() &&
                           std::all_of(r.candidates.begin(), r.candidates.end(),
                                       [](const Candidate& c) { return c.reject == RejectKind::kRequest; });
  if (options.find_min_pp && !all_invalid) {
    int max_pp = 0;
    for (const Candidate& c : r.candidates)
      if (!c.boundaries.empty()) max_pp = std::max(max_pp, c.boundaries.back());
    if (max_pp == 0) {
      auto t = CostsFor(model, options, r.candidates.empty() ? 1 : r.candidates[0].batch.micro_batch_size,
                        Recompute::kNone);
      max_pp = t.ok() ? static_cast<int>(t->layers.size()) : options.pp_size;
    }
    // Above the requested P only when it failed; below it to say why smaller P fail.
    PW_ASSIGN_OR_RETURN(MinPipeline mp, FindSmallestPipeline(model, options, r.chosen >= 0 ? options.pp_size : max_pp));
    r.min_pp = mp;
  }
  if (r.chosen < 0) {
    // Why: memory, the request itself (a family that does not take that v,
    // layers that do not split), or something else (generator, validator...).
    int memory = 0, invalid = 0;
    std::vector<std::string> reasons;  // distinct, in table order
    for (const Candidate& c : r.candidates) {
      if (c.reject == RejectKind::kMemory) ++memory;
      else if (c.reject == RejectKind::kRequest) ++invalid;
      if (c.reject != RejectKind::kMemory && std::find(reasons.begin(), reasons.end(), c.reason) == reasons.end())
        reasons.push_back(c.reason);
    }
    const int total = static_cast<int>(r.candidates.size());
    std::string msg = "no candidate fits on P=" + std::to_string(options.pp_size) + " ranks";
    if (memory > 0 && r.memory_limit_bytes) msg += " with --memory-limit " + FormatBytes(*r.memory_limit_bytes);
    if (memory < total) {
      msg += memory == 0 ? ": every candidate was refused: " : ": " + std::to_string(total - memory) + " of " +
                                                               std::to_string(total) + " refused for other reasons than memory: ";
      for (size_t k = 0; k < reasons.size() && k < 3; ++k) msg += (k ? "; " : "") + reasons[k];
      if (reasons.size() > 3) msg += "; and " + std::to_string(reasons.size() - 3) + " more (see the table)";
    }
    if (total > 0 && invalid == total) return Status::InvalidArgument(msg + "\n" + FormatCandidateTable(r));
    if (memory > 0 && r.min_pp) {
      if (r.min_pp->pp_size > 0)
        msg += "; the smallest P that fits (full recompute) is " + std::to_string(r.min_pp->pp_size) +
               (r.min_pp->pp_size > 1 ? "; at P=" + std::to_string(r.min_pp->pp_size - 1) + ": " + r.min_pp->smaller_reason
                                      : std::string());
      else
        msg += "; no P up to the layer count fits even with full recompute (" + r.min_pp->smaller_reason + ")";
    }
    msg += "\n" + FormatCandidateTable(r);
    return Status::Infeasible(msg);
  }
  return r;
}

StatusOr<Plan> BuildPlan(const SearchResult& r, const PlannerModel& model, const PlannerOptions& o) {
  if (r.chosen < 0 || !r.candidates[r.chosen].artifacts)
    return Status::InvalidArgument("no feasible candidate to write a plan for");
  const Candidate& c = r.candidates[r.chosen];
  const CandidateArtifacts& a = *c.artifacts;
  Plan plan = MakePlan(c.schedule, a.lowered, a.costs, a.sim, r.memory_limit_bytes);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    plan.stages[s].layer_begin = c.boundaries[s];
    plan.stages[s].layer_end = c.boundaries[s + 1];
  }
  // The model section: the config planned for, or the HF config a
  // layer-cost file names when its layer list is that model's.
  std::optional<ModelConfig> planned = model.config;
  if (!planned && a.table.model.is_object()) {
    auto from_table = ParseModelConfig(a.table.model, "layer-cost file: model");
    if (from_table.ok() && from_table->num_layers + 2 == static_cast<int>(a.table.layers.size())) planned = *from_table;
  }
  if (planned) {
    plan.model = *planned;
    plan.model->raw = nlohmann::json();
    plan.layers = PlanLayers(*plan.model);
  }
  const int64_t seq = o.seq_length > 0 ? o.seq_length
                                       : (model.config && !model.profile ? model.config->max_positions : a.table.seq_length);
  PlanTraining t;
  t.micro_batch_size = c.batch.micro_batch_size;
  t.seq_length = seq;
  t.global_batch_size = c.batch.global_batch_size;
  t.microbatch_sizes = c.batch.microbatch_sizes;
  PW_ASSIGN_OR_RETURN(t.recompute, ParseRecompute(c.recompute));
  t.precision = o.precision;
  t.global_barrier = o.clip_grad_norm > 0;
  t.clip_grad_norm = o.clip_grad_norm;
  plan.training = t;
  nlohmann::json planner = CandidatesToJson(r);
  if (model.device) planner["device"] = DeviceSpecToJson(*model.device);
  std::vector<int64_t> transient;
  for (size_t k = 0; k < c.peak_bytes.size(); ++k)
    transient.push_back(c.peak_bytes[k] - a.sim.per_rank[k].peak_memory_bytes);
  planner["recompute_workspace_bytes_per_rank"] = transient;
  plan.planner = planner;
  return plan;
}

}  // namespace pw
