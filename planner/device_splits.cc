// SearchDeviceSplits (planner.h): every split of N devices into T x P x D
// (with ZeRO-1 as a searched option), each searched as EvaluateCandidates,
// by branch and bound over the splits (docs/ALGORITHMS.md §11). The splits
// share one UnitOrders: the unit-cost orders of a (family, P, v, m) are
// generated once for every T, D and ZeRO-1 setting.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "base/format.h"
#include "planner/candidate_search.h"
#include "planner/data_parallel.h"
#include "planner/planner.h"

namespace pw {

namespace {

// The rejection closest to fitting: a memory one with the smallest peak,
// else the first; "" for an empty table.
std::string ClosestRejection(const SearchResult& r) {
  const Candidate* best = nullptr;
  for (const Candidate& c : r.candidates) {
    if (c.reject != RejectKind::kMemory) continue;
    if (!best || (c.max_peak_bytes > 0 && c.max_peak_bytes < best->max_peak_bytes)) best = &c;
  }
  if (!best && !r.candidates.empty()) best = &r.candidates.front();
  if (!best) return "";
  return best->schedule + " v=" + std::to_string(best->virtual_stages) +
         " b=" + std::to_string(best->batch.micro_batch_size) + " recompute=" + best->recompute + ": " + best->reason;
}

}  // namespace

StatusOr<DeviceSplitSearch> SearchDeviceSplits(const PlannerModel& model, const PlannerOptions& options,
                                               int num_devices) {
  if (num_devices < 1) return Status::InvalidArgument("--num-devices must be >= 1, got " + std::to_string(num_devices));
  if (num_devices > (1 << 20))
    return Status::InvalidArgument("--num-devices " + std::to_string(num_devices) + " is more than 1048576");
  if (options.clip_grad_norm > 0 && options.objective == Objective::kSteady)
    return Status::InvalidArgument(
        "--clip-grad-norm with --objective steady: clipping by the global norm puts a barrier at the end of every "
        "step, so the step time is makespan_s, not steady_step_s (PLAN_FORMAT rule 9); use --objective makespan");
  // The tensor-parallel sizes: --tp as given (checked here, before any
  // search), or every T <= gpus_per_node that divides N and the model.
  std::vector<int> tps;
  if (options.search_tensor_parallel && model.config && !model.table && !model.profile && model.device) {
    for (int T = 1; T <= model.device->gpus_per_node && T <= num_devices; ++T) {
      if (num_devices % T != 0) continue;
      PlannerOptions o = options;
      o.tp_size = T;
      std::vector<std::string> ignored;
      if (CheckTensorParallelRequest(model, o, &ignored).ok()) tps.push_back(T);
    }
  } else {
    std::vector<std::string> ignored;
    PW_RETURN_IF_ERROR(CheckTensorParallelRequest(model, options, &ignored));
    if (num_devices % options.tp_size != 0)
      return Status::InvalidArgument("--num-devices " + std::to_string(num_devices) +
                                     " is not a multiple of --tensor-model-parallel-size " +
                                     std::to_string(options.tp_size));
    tps.push_back(options.search_tensor_parallel ? 1 : options.tp_size);
  }
  // The layer count bounds P (a stage cannot be empty).
  const Recompute probe_rc = model.table && ParseRecompute(model.table->recompute).ok()
                                 ? *ParseRecompute(model.table->recompute)
                                 : Recompute::kNone;
  PlannerOptions probe_options = options;
  probe_options.tp_size = tps.front();
  PW_ASSIGN_OR_RETURN(LayerCostTable probe,
                      CostsFor(model, probe_options, options.micro_batch_size.value_or(1), probe_rc));
  const int L = static_cast<int>(probe.layers.size());
  std::optional<int64_t> limit = options.memory_limit_bytes;
  if (!limit && model.device)
    limit = model.device->memory_bytes - options.memory_reserve_bytes.value_or(model.device->ReserveBytes());

  DeviceSplitSearch out;
  out.num_devices = num_devices;
  struct Pending {
    size_t index;
    PlannerOptions options;
  };
  std::vector<Pending> pending;
  std::map<std::pair<int, int64_t>, double> compute_of;  // (T, b) -> seconds of one microbatch on all layers
  for (int T : tps) {
    const int PD = num_devices / T;
    for (int P = 1; P <= PD && P <= L; ++P) {
      if (PD % P != 0) continue;
      const int D = PD / P;
      std::vector<bool> zero_options;
      if (D >= 2 && options.search_distributed_optimizer && !options.distributed_optimizer)
        zero_options = {false, true};
      else
        zero_options = {options.distributed_optimizer && D >= 2};
      for (bool zero : zero_options) {
        DeviceSplit sp;
        sp.tp_size = T;
        sp.pp_size = P;
        sp.dp_size = D;
        sp.distributed_optimizer = zero;
        PlannerOptions o = options;
        o.tp_size = T;
        o.pp_size = P;
        o.dp_size = D;
        o.distributed_optimizer = zero;
        o.find_min_pp = false;
        sp.sequence_parallel = SequenceParallelOn(o);
        // Cheap refusals first: the batch flags, the static bytes of the
        // whole model over P ranks, then the split's compute lower bound.
        auto batches = ResolveBatch(o);
        if (!batches.ok() || batches->empty()) {
          sp.reason = batches.ok() ? "no micro-batch size divides the batch" : batches.status().message();
          out.splits.push_back(std::move(sp));
          continue;
        }
        auto table = CostsFor(model, o, batches->front().micro_batch_size, probe_rc);
        if (table.ok() && limit) {
          int64_t total = 0;
          for (const LayerCost& l : table->layers) total += l.static_bytes;
          if (zero) {
            DataParallelSpec dp;
            dp.dp_size = D;
            dp.distributed_optimizer = true;
            dp.precision = options.precision;
            total = StaticBytesOfParams(total / StaticBytesPerParam(options.precision), dp);
          }
          if (total > static_cast<int64_t>(P) * *limit) {
            sp.reason = "static bytes (params + grads + optimizer state) per TP rank total " + FormatBytes(total) +
                        " > P x the limit = " + std::to_string(P) + " x " + FormatBytes(*limit);
            out.splits.push_back(std::move(sp));
            continue;
          }
        }
        double lb = std::numeric_limits<double>::infinity();
        for (const BatchSplit& b : *batches) {
          auto key = std::make_pair(T, b.micro_batch_size);
          auto it = compute_of.find(key);
          if (it == compute_of.end()) {
            double total = -1.0;
            auto t = CostsFor(model, o, b.micro_batch_size, probe_rc);
            if (t.ok()) {
              total = 0.0;
              for (const LayerCost& l : t->layers) total += l.f + (l.b >= 0 ? l.b : l.i + l.w);
            }
            it = compute_of.emplace(key, total).first;
          }
          if (it->second >= 0) lb = std::min(lb, b.num_microbatches * it->second / P);
        }
        sp.lower_bound_s = std::isfinite(lb) ? lb : 0.0;
        pending.push_back(Pending{out.splits.size(), o});
        out.splits.push_back(std::move(sp));
      }
    }
  }
  // Branch and bound: splits in the order of their lower bound (ties: the
  // order above); a split whose bound exceeds the best step found is not
  // searched, and inside a split no candidate is simulated whose own bound
  // exceeds it (CandidateSearch::LowerBound).
  std::stable_sort(pending.begin(), pending.end(), [&](const Pending& a, const Pending& b) {
    return out.splits[a.index].lower_bound_s < out.splits[b.index].lower_bound_s;
  });
  double best = std::numeric_limits<double>::infinity();
  UnitOrders orders;  // shared by every split's search
  if (options.prune_by_bound) {
    // A first incumbent, cheaply: each split with the two fixed-order
    // families 1F1B and interleaved 1F1B (v = 2), the smallest micro-batch
    // size. Its best step only lowers the cutoff: every candidate whose
    // step is below it is still simulated below (its bound is below its
    // step), so the choice is the full search's.
    for (const Pending& p : pending) {
      PlannerOptions probe = p.options;
      probe.schedules = {"1f1b", "interleaved-1f1b"};
      probe.virtual_stages.reset();
      probe.max_virtual_stages = 2;
      if (!probe.micro_batch_size && !probe.num_microbatches) probe.micro_batch_size = 1;
      probe.step_cutoff_s = best;
      auto r = EvaluateCandidates(model, probe, orders);
      if (r.ok() && r->chosen >= 0) best = std::min(best, r->candidates[r->chosen].step_s);
    }
  }
  bool all_invalid = true;  // every split refused by its flags (batch, layers)
  for (const DeviceSplit& sp : out.splits)
    if (sp.reason.rfind("static bytes", 0) == 0) all_invalid = false;
  for (Pending& p : pending) {
    DeviceSplit& sp = out.splits[p.index];
    if (options.prune_by_bound && sp.lower_bound_s > best * (1.0 + 1e-9)) {
      all_invalid = false;
      char text[200];
      std::snprintf(text, sizeof text,
                    "bound: its compute alone takes at least %.6g s per step, the best step found is %.6g s",
                    sp.lower_bound_s, best);
      sp.reason = text;
      continue;
    }
    if (options.prune_by_bound) p.options.step_cutoff_s = std::min(options.step_cutoff_s, best);
    auto r = EvaluateCandidates(model, p.options, orders);
    if (!r.ok()) {
      if (r.status().code() != StatusCode::kInvalidArgument) return r.status();
      sp.reason = r.status().message();
      continue;
    }
    all_invalid = false;
    sp.searched = true;
    sp.result = std::move(*r);
    if (sp.result.chosen < 0) {
      const bool bounded = std::any_of(sp.result.candidates.begin(), sp.result.candidates.end(),
                                       [](const Candidate& c) { return c.reject == RejectKind::kBound; });
      sp.reason = bounded ? "no candidate beats the best step found; the closest: " + ClosestRejection(sp.result)
                          : "no candidate fits; the closest: " + ClosestRejection(sp.result);
    } else {
      best = std::min(best, sp.result.candidates[sp.result.chosen].step_s);
    }
  }
  for (size_t k = 0; k < out.splits.size(); ++k) {
    if (!out.splits[k].feasible()) continue;
    const double step = out.splits[k].result.candidates[out.splits[k].result.chosen].step_s;
    if (out.chosen < 0 || step < out.splits[out.chosen].result.candidates[out.splits[out.chosen].result.chosen].step_s)
      out.chosen = static_cast<int>(k);
  }
  if (out.chosen < 0) {
    std::string msg = "no split of --num-devices " + std::to_string(num_devices) + " into " +
                      (tps.size() > 1 || tps.front() > 1 ? "T x P x D" : "P x D") + " fits:";
    for (const DeviceSplit& sp : out.splits)
      msg += "\n  " + (tps.size() > 1 || tps.front() > 1 ? "T=" + std::to_string(sp.tp_size) + " x " : std::string()) +
             "P=" + std::to_string(sp.pp_size) + " x D=" + std::to_string(sp.dp_size) +
             (sp.distributed_optimizer ? " ZeRO-1" : "") + ": " + sp.reason;
    if (out.splits.empty()) msg += " (no P <= the layer count divides it)";
    if (all_invalid) return Status::InvalidArgument(msg);
    return Status::Infeasible(msg);
  }
  return out;
}

}  // namespace pw
