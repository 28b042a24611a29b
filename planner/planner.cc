#include "planner/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "planner/candidate_search.h"
#include "planner/data_parallel.h"
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

bool SequenceParallelOn(const PlannerOptions& o) { return o.tp_size > 1 && o.sequence_parallel.value_or(true); }

StatusOr<LayerCostTable> CostsFor(const PlannerModel& model, const PlannerOptions& o, int64_t b, Recompute r) {
  if (o.tp_size > 1 && (model.table || (!model.config && !model.profile)))
    return Status::InvalidArgument("--tensor-model-parallel-size " + std::to_string(o.tp_size) +
                                   " needs a HF --model-config or a measured --profile: a layer-cost file holds the "
                                   "costs of whole layers on one device");
  if (model.profile) {
    if (r != Recompute::kNone)
      return Status::InvalidArgument("the profile was measured without recompute; --recompute-granularity " +
                                     std::string(RecomputeName(r)) + " needs other costs");
    const int64_t s = o.seq_length > 0 ? o.seq_length : model.profile->seq_length;
    PW_ASSIGN_OR_RETURN(
        LayerCostTable t,
        ProfileLayerCosts(*model.profile, model.config ? model.config->raw : model.profile->model, b, s));
    if (!t.comm && model.device) t.comm = model.device->Comm();
    const int measured_tp = model.profile->setup.is_object() ? model.profile->setup.value("tp_size", 1) : 1;
    const bool measured_sp =
        model.profile->setup.is_object() ? model.profile->setup.value("sequence_parallel", false) : false;
    if (measured_tp > 1) {
      // Measured as TP shards (`profile --tp T`): per-rank costs with their
      // collectives inside, for that T and sequence parallelism only.
      if (measured_tp != o.tp_size || measured_sp != SequenceParallelOn(o))
        return Status::InvalidArgument("--profile: measured with --tp " + std::to_string(measured_tp) +
                                       (measured_sp ? " (sequence parallel)" : " (no sequence parallelism)") +
                                       ", planned with --tp " + std::to_string(o.tp_size) +
                                       (SequenceParallelOn(o) ? " (sequence parallel)" : " (no sequence parallelism)") +
                                       ": plan the measured layout, or profile this one (or at --tp 1, scaled)");
      if (measured_sp)
        for (LayerCost& c : t.layers)
          if (c.kind != "head") c.output_bytes /= o.tp_size;  // (b, s/t, h) sequence shards between stages
      return t;
    }
    if (o.tp_size > 1) {
      // Whole layers measured on one rank, scaled to a TP rank's share,
      // plus the TP collectives the profile measured (cost_model.h).
      PW_ASSIGN_OR_RETURN(ModelConfig m, ParseModelConfig(t.model, "the profile's model"));
      TrainingShape shape;
      shape.micro_batch_size = b;
      shape.seq_length = s;
      shape.recompute = r;
      shape.precision = o.precision;
      shape.tp_size = o.tp_size;
      shape.sequence_parallel = SequenceParallelOn(o);
      std::optional<CommModel> link;
      if (model.device) link = TensorParallelLink(*model.device, o.tp_size);
      return TensorParallelProfileCosts(t, m, shape, model.profile->collective_fits, link);
    }
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
  shape.tp_size = o.tp_size;
  shape.sequence_parallel = SequenceParallelOn(o);
  return BuildLayerCosts(*model.config, *model.device, shape);
}

const char* RejectKindName(RejectKind kind) {
  switch (kind) {
    case RejectKind::kNone:
      return "";
    case RejectKind::kRequest:
      return "request";
    case RejectKind::kMemory:
      return "memory";
    case RejectKind::kCosts:
      return "costs";
    case RejectKind::kSchedule:
      return "schedule";
    case RejectKind::kBound:
      return "bound";
  }
  return "?";
}

namespace {

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

// True for a device that is not a GPU (the shipped CPU-core): tensor
// parallelism beyond gpus_per_node is then allowed, with a note.
bool IsCpuDevice(const DeviceSpec& d) {
  return d.name.size() >= 3 && (d.name[0] == 'C' || d.name[0] == 'c') && (d.name[1] == 'P' || d.name[1] == 'p') &&
         (d.name[2] == 'U' || d.name[2] == 'u');
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

Status CheckTensorParallelRequest(const PlannerModel& model, const PlannerOptions& o, std::vector<std::string>* notes) {
  if (o.tp_size < 1)
    return Status::InvalidArgument("--tensor-model-parallel-size must be >= 1, got " + std::to_string(o.tp_size));
  const bool sp_asked = o.sequence_parallel.value_or(false);
  if (o.tp_size == 1 && !sp_asked) return Status::Ok();
  if (o.tp_size > 1 && (model.table || (!model.config && !model.profile)))
    return Status::InvalidArgument("--tensor-model-parallel-size " + std::to_string(o.tp_size) +
                                   " needs a HF --model-config or a measured --profile: a layer-cost file holds the "
                                   "costs of whole layers on one device");
  if (model.profile && o.tp_size > 1 && !model.config) {
    PW_ASSIGN_OR_RETURN(ModelConfig m, ParseModelConfig(model.profile->model, "the profile's model"));
    const int64_t s = o.seq_length > 0 ? o.seq_length : model.profile->seq_length;
    PW_RETURN_IF_ERROR(CheckTensorParallel(m, o.tp_size, SequenceParallelOn(o) || sp_asked, s));
  }
  if (model.config) {
    const int64_t s = o.seq_length > 0 ? o.seq_length : model.config->max_positions;
    PW_RETURN_IF_ERROR(CheckTensorParallel(*model.config, o.tp_size, SequenceParallelOn(o) || sp_asked, s));
  }
  if (model.device && o.tp_size > model.device->gpus_per_node) {
    const std::string what = "--tensor-model-parallel-size " + std::to_string(o.tp_size) + " is more than " +
                             model.device->name + "'s " + std::to_string(model.device->gpus_per_node) +
                             " devices per node (gpus_per_node)";
    if (!IsCpuDevice(*model.device))
      return Status::InvalidArgument(what +
                                     ": a tensor-parallel group runs four collectives per layer and "
                                     "microbatch and must share a node's NVLink (Megatron keeps TP inside a node)");
    notes->push_back(what + ": allowed on a CPU device; its collectives are timed on the inter-node link");
  }
  return Status::Ok();
}

StatusOr<SearchResult> EvaluateCandidates(const PlannerModel& model, const PlannerOptions& o) {
  UnitOrders orders;
  return EvaluateCandidates(model, o, orders);
}

StatusOr<SearchResult> EvaluateCandidates(const PlannerModel& model, const PlannerOptions& o, UnitOrders& orders) {
  if (o.pp_size < 1) return Status::InvalidArgument("--pp must be >= 1, got " + std::to_string(o.pp_size));
  if (o.dp_size < 1)
    return Status::InvalidArgument("--data-parallel-size must be >= 1, got " + std::to_string(o.dp_size));
  if (o.distributed_optimizer && o.dp_size < 2)
    return Status::InvalidArgument(
        "--use-distributed-optimizer shards the optimizer state over the data-parallel "
        "ranks: it needs --data-parallel-size >= 2, got " +
        std::to_string(o.dp_size));
  if (o.virtual_stages && *o.virtual_stages < 1)
    return Status::InvalidArgument("--num-virtual-stages-per-pipeline-rank must be >= 1, got " +
                                   std::to_string(*o.virtual_stages));
  if (o.seq_length < 0)
    return Status::InvalidArgument("--seq-length must be >= 1, got " + std::to_string(o.seq_length));
  if (o.max_virtual_stages < 1)
    return Status::InvalidArgument("--max-virtual-stages must be >= 1, got " + std::to_string(o.max_virtual_stages));
  if (o.seq_length > 0 && model.config && model.config->max_positions > 0 && o.seq_length > model.config->max_positions)
    return Status::InvalidArgument(
        "--seq-length " + std::to_string(o.seq_length) + " is more than the model's " +
        (FamilyInfo(model.config->family).style == DecoderStyle::kGpt2 ? "n_positions" : "max_position_embeddings") +
        " (" + std::to_string(model.config->max_positions) + "): its position embeddings do not reach that far");
  std::vector<std::string> notes;
  PW_RETURN_IF_ERROR(CheckTensorParallelRequest(model, o, &notes));
  PW_ASSIGN_OR_RETURN(std::vector<ScheduleInfo> families, Families(o));
  PW_ASSIGN_OR_RETURN(std::vector<BatchSplit> batches, ResolveBatch(o));
  if (batches.empty())
    return Status::InvalidArgument(
        "--global-batch-size " + std::to_string(*o.global_batch_size) +
        (o.dp_size > 1 ? " / --data-parallel-size " + std::to_string(o.dp_size) : std::string()) +
        " is not divisible by any micro-batch size tried (1, 2, 4, 8); give --micro-batch-size");
  const std::vector<Recompute> recomputes = RecomputeOptions(model, o);
  int64_t limit = kUnlimitedBytes;
  std::optional<int64_t> capacity, reserve;
  if (o.memory_reserve_bytes) {
    if (o.memory_limit_bytes)
      return Status::InvalidArgument(
          "--memory-reserve with --memory-limit: give the limit itself, or the reserve to "
          "keep free of the device's capacity, not both");
    if (!model.device) return Status::InvalidArgument("--memory-reserve needs --device (the capacity it is kept from)");
    if (*o.memory_reserve_bytes < 0 || *o.memory_reserve_bytes >= model.device->memory_bytes)
      return Status::InvalidArgument("--memory-reserve " + FormatBytes(*o.memory_reserve_bytes) +
                                     " must be >= 0 and below " + model.device->name + "'s capacity " +
                                     FormatBytes(model.device->memory_bytes));
  }
  if (o.memory_limit_bytes) {
    if (*o.memory_limit_bytes <= 0)
      return Status::InvalidArgument("--memory-limit must be > 0, got " + std::to_string(*o.memory_limit_bytes));
    limit = *o.memory_limit_bytes;
  } else if (model.device) {
    capacity = model.device->memory_bytes;
    reserve = o.memory_reserve_bytes.value_or(model.device->ReserveBytes());
    limit = *capacity - *reserve;
  }
  CandidateSearch search(model, o, limit, &orders);
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
  result.dp_size = o.dp_size;
  result.distributed_optimizer = o.distributed_optimizer && o.dp_size > 1;
  result.tp_size = o.tp_size;
  result.sequence_parallel = SequenceParallelOn(o);
  result.notes = notes;
  if (limit != kUnlimitedBytes) result.memory_limit_bytes = limit;
  result.capacity_bytes = capacity;
  result.reserve_bytes = reserve;
  std::vector<Candidate> all;
  int family_index = 0;
  bool found = false;  // stop_at_first_feasible: a feasible candidate was found
  for (const ScheduleInfo& f : families) {
    if (found) break;
    ++family_index;
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
    for (size_t vi = 0; vi < vs.size() && !found; ++vi)
      for (size_t bi = 0; bi < batches.size() && !found; ++bi)
        for (Recompute rc : recomputes) {
          const int v = vs[vi];
          const BatchSplit& b = batches[bi];
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
              c.reject = RejectKind::kCosts;
              c.reason = "costs: " + tab.status().message();
            } else {
              auto ov = ResolveStageOverrides(**tab, o.pp_size * v, o.first_stage_num_layers, o.last_stage_num_layers);
              if (!ov.ok()) {
                c.reject = RejectKind::kRequest;
                c.reason = ov.status().message();
              } else {
                search.Evaluate(c, f, rc, *ov);
              }
            }
          }
          found = c.feasible && o.stop_at_first_feasible;
          all.push_back(std::move(c));
          if (o.progress)
            o.progress(o.pp_size, static_cast<int>(all.size()), family_index, static_cast<int>(families.size()),
                       f.name);
          if (found) break;
        }
  }
  // Rank: feasible by (step, max peak, search order); then rejected in search
  // order. Steps are compared in whole nanoseconds: candidates whose
  // simulated steps differ only by floating-point rounding (e.g. the same
  // steady state reached by interleaved 1F1B and interleaved ZB) tie, and the
  // one with more memory headroom wins.
  auto step_ns = [](const Candidate& c) { return std::llround(c.step_s * 1e9); };
  std::vector<size_t> order(all.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Candidate &x = all[a], &y = all[b];
    if (x.feasible != y.feasible) return x.feasible;
    if (!x.feasible) return false;
    if (step_ns(x) != step_ns(y)) return step_ns(x) < step_ns(y);
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
  if (!limit && model.device)
    limit = model.device->memory_bytes - options.memory_reserve_bytes.value_or(model.device->ReserveBytes());
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
      if (options.distributed_optimizer && options.dp_size > 1) {  // ZeRO-1 shards the optimizer state
        DataParallelSpec dp;
        dp.dp_size = options.dp_size;
        dp.distributed_optimizer = true;
        dp.precision = options.precision;
        total = StaticBytesOfParams(total / StaticBytesPerParam(options.precision), dp);
      }
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
    o.stop_at_first_feasible = true;  // only whether P fits
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
      auto t =
          CostsFor(model, options, r.candidates.empty() ? 1 : r.candidates[0].batch.micro_batch_size, Recompute::kNone);
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
      if (c.reject == RejectKind::kMemory)
        ++memory;
      else if (c.reject == RejectKind::kRequest)
        ++invalid;
      if (c.reject != RejectKind::kMemory && std::find(reasons.begin(), reasons.end(), c.reason) == reasons.end())
        reasons.push_back(c.reason);
    }
    const int total = static_cast<int>(r.candidates.size());
    std::string msg = "no candidate fits on P=" + std::to_string(options.pp_size) + " ranks";
    if (options.dp_size > 1) msg += " (x D=" + std::to_string(options.dp_size) + " data-parallel replicas)";
    if (memory > 0 && r.memory_limit_bytes) msg += " with --memory-limit " + FormatBytes(*r.memory_limit_bytes);
    if (memory < total) {
      msg += memory == 0 ? ": every candidate was refused: "
                         : ": " + std::to_string(total - memory) + " of " + std::to_string(total) +
                               " refused for other reasons than memory: ";
      for (size_t k = 0; k < reasons.size() && k < 3; ++k) msg += (k ? "; " : "") + reasons[k];
      if (reasons.size() > 3) msg += "; and " + std::to_string(reasons.size() - 3) + " more (see the table)";
    }
    SearchResult rejections = r;  // the smallest P is in the message already
    rejections.min_pp.reset();
    const std::string summary =
        "\n" + FormatRejectionSummary(rejections) + "(pipewright plan --explain lists every candidate)";
    if (total > 0 && invalid == total) return Status::InvalidArgument(msg + summary);
    if (memory > 0 && r.min_pp) {
      if (r.min_pp->pp_size > 0)
        msg +=
            "; the smallest P that fits (full recompute) is " + std::to_string(r.min_pp->pp_size) +
            (r.min_pp->pp_size > 1 ? "; at P=" + std::to_string(r.min_pp->pp_size - 1) + ": " + r.min_pp->smaller_reason
                                   : std::string());
      else
        msg += "; no P up to the layer count fits even with full recompute (" + r.min_pp->smaller_reason + ")";
    }
    msg += summary;
    return Status::Infeasible(msg);
  }
  return r;
}

}  // namespace pw
