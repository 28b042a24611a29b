#include "planner/explain.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "planner/partition.h"

namespace pw {

namespace {

std::string Row(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Row(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

double GiB(int64_t b) { return static_cast<double>(b) / double(int64_t{1} << 30); }

}  // namespace

namespace {

// The smallest-P finding (SearchResult::min_pp), or "" when there is none.
std::string MinPipelineText(const SearchResult& r) {
  if (!r.min_pp) return "";
  if (r.min_pp->pp_size <= 0) return "no P up to the layer count fits even with full recompute\n";
  std::string out = Row("smallest P that fits (full recompute, any schedule): %d\n", r.min_pp->pp_size);
  if (r.min_pp->pp_size > 1) out += Row("  P=%d fails: %s\n", r.min_pp->pp_size - 1, r.min_pp->smaller_reason.c_str());
  return out;
}

// "; D=8 data-parallel replicas (ZeRO-1)", or "" for D = 1.
std::string DataParallelText(const SearchResult& r) {
  if (r.dp_size <= 1) return "";
  return Row("; D=%d data-parallel replicas%s", r.dp_size, r.distributed_optimizer ? " (ZeRO-1)" : "");
}

// "74.41 GiB (capacity 79.65 GiB - runtime reserve 5.23 GiB)", or the limit
// alone when it was given directly, or "unlimited".
std::string LimitText(const SearchResult& r) {
  if (!r.memory_limit_bytes) return "unlimited";
  std::string text = FormatBytes(*r.memory_limit_bytes);
  if (r.capacity_bytes && r.reserve_bytes)
    text +=
        " (capacity " + FormatBytes(*r.capacity_bytes) + " - runtime reserve " + FormatBytes(*r.reserve_bytes) + ")";
  return text;
}

}  // namespace

std::string FormatCandidateTable(const SearchResult& r) {
  std::string out;
  out += Row("objective: %s (%s); memory limit per rank: %s; P=%d%s\n", ObjectiveField(r.objective),
             r.objective == Objective::kMakespan ? "step ends at a global optimizer barrier"
                                                 : "steps overlap, no global barrier",
             LimitText(r).c_str(), r.pp_size, DataParallelText(r).c_str());
  const bool dp = r.dp_size > 1;
  out += Row("%-4s %-17s %2s %5s %3s %-9s %11s %11s %11s %7s%s %21s  %s\n", "rank", "schedule", "v", "m", "b",
             "recompute", "step_s", "makespan_s", "steady_s", "bubble",
             dp ? Row(" %11s %11s", "reduce_s", "exposed_s").c_str() : "", "peak GiB/rank max/min", "layers per stage");
  int rank = 0, rejected = 0;
  for (size_t k = 0; k < r.candidates.size(); ++k) {
    const Candidate& c = r.candidates[k];
    if (!c.feasible) {
      ++rejected;
      continue;
    }
    int64_t mn = c.peak_bytes.empty() ? 0 : *std::min_element(c.peak_bytes.begin(), c.peak_bytes.end());
    out += Row("%-4s %-17s %2d %5d %3lld %-9s %11.5f %11.5f %11.5f %7.4f%s %10.2f / %8.2f  %s\n",
               (std::to_string(++rank) + (static_cast<int>(k) == r.chosen ? "*" : "")).c_str(), c.schedule.c_str(),
               c.virtual_stages, c.batch.num_microbatches, static_cast<long long>(c.batch.micro_batch_size),
               c.recompute.c_str(), c.step_s, c.makespan_s, c.steady_step_s, c.bubble_ratio,
               dp ? Row(" %11.5f %11.5f", c.reduce_s, c.reduce_exposed_s).c_str() : "", GiB(c.max_peak_bytes), GiB(mn),
               FormatStageSizes(c.boundaries).c_str());
  }
  if (rank == 0) out += "(no candidate fits)\n";
  if (rejected > 0) {
    out += Row("rejected (%d):\n", rejected);
    for (const Candidate& c : r.candidates)
      if (!c.feasible)
        out += Row("  %-17s v=%d m=%d b=%lld %-9s %s\n", c.schedule.c_str(), c.virtual_stages, c.batch.num_microbatches,
                   static_cast<long long>(c.batch.micro_batch_size), c.recompute.c_str(), c.reason.c_str());
  }
  out += MinPipelineText(r);
  return out;
}

std::string FormatRejectionSummary(const SearchResult& r) {
  std::string out;
  const RejectKind kinds[] = {RejectKind::kMemory, RejectKind::kRequest, RejectKind::kCosts, RejectKind::kSchedule,
                              RejectKind::kBound};
  int rejected = 0;
  for (const Candidate& c : r.candidates) rejected += c.feasible ? 0 : 1;
  if (rejected > 0) {
    out += Row("rejected: %d of %zu candidates\n", rejected, r.candidates.size());
    for (RejectKind kind : kinds) {
      int n = 0;
      const Candidate* example = nullptr;
      for (const Candidate& c : r.candidates)
        if (!c.feasible && c.reject == kind) {
          if (!example) example = &c;
          ++n;
        }
      if (n == 0) continue;
      out += Row("  %-8s %4d, e.g. %s v=%d m=%d b=%lld %s: %s\n", RejectKindName(kind), n, example->schedule.c_str(),
                 example->virtual_stages, example->batch.num_microbatches,
                 static_cast<long long>(example->batch.micro_batch_size), example->recompute.c_str(),
                 example->reason.c_str());
    }
  }
  out += MinPipelineText(r);
  return out;
}

namespace {

// "zb-v v=2 m=128 b=1 recompute=none".
std::string CandidateName(const Candidate& c) {
  return Row("%s v=%d m=%d b=%lld recompute=%s", c.schedule.c_str(), c.virtual_stages, c.batch.num_microbatches,
             static_cast<long long>(c.batch.micro_batch_size), c.recompute.c_str());
}

}  // namespace

std::string LayoutName(int tp_size, int pp_size, int dp_size) {
  return Row("TP%d x PP%d x DP%d", tp_size, pp_size, dp_size);
}

std::string BubbleWarning(const SearchResult& r) {
  const Candidate& best = r.candidates[r.chosen];
  if (!(best.bubble_ratio > 0.5)) return "";
  std::string out =
      Row("warning: the chosen plan's bubble ratio is %.3f (> 0.5): its devices idle %.0f %% of the step\n",
          best.bubble_ratio, 100.0 * best.bubble_ratio);
  const Candidate* closest = nullptr;
  int memory = 0;
  for (const Candidate& c : r.candidates) {
    if (c.reject != RejectKind::kMemory) continue;
    ++memory;
    if (!closest || (c.max_peak_bytes > 0 && c.max_peak_bytes < closest->max_peak_bytes)) closest = &c;
  }
  const int stages = r.pp_size * best.virtual_stages;
  if (memory > 0) {
    out += Row("  why: memory. %d candidates were rejected for memory, the closest %s: %s\n", memory,
               CandidateName(*closest).c_str(), closest->reason.c_str());
    out +=
        "  the chosen order keeps few microbatches in flight to fit the limit, so the pipeline runs almost serially\n";
  } else {
    out += Row("  why: m=%d microbatches for %d stages (P=%d x v=%d)\n", best.batch.num_microbatches, stages, r.pp_size,
               best.virtual_stages);
  }
  out +=
      Row("  what would change it: %s--use-distributed-optimizer (ZeRO-1 shards the optimizer state over D), a "
          "larger --pp (fewer layers per rank), --recompute-granularity full, more microbatches (--global-batch-size, "
          "a smaller --micro-batch-size), or devices with more memory\n",
          r.tp_size < 8 ? "--tensor-model-parallel-size up to the GPUs of a node (each rank holds 1/T of every "
                          "layer), "
                        : "");
  return out;
}

std::string FormatPlanSummary(const SearchResult& r, int next_best) {
  const Candidate& best = r.candidates[r.chosen];
  std::string out;
  int feasible = 0;
  for (const Candidate& c : r.candidates) feasible += c.feasible ? 1 : 0;
  out += Row("objective: %s (%s); memory limit per rank: %s%s\n", ObjectiveField(r.objective),
             r.objective == Objective::kMakespan ? "step ends at a global optimizer barrier"
                                                 : "steps overlap, no global barrier",
             LimitText(r).c_str(), DataParallelText(r).c_str());
  out += FormatRejectionSummary(r);
  int shown = 0;
  for (size_t k = 0; k < r.candidates.size() && shown < next_best; ++k) {
    const Candidate& c = r.candidates[k];
    if (!c.feasible || static_cast<int>(k) == r.chosen) continue;
    if (shown++ == 0) out += "next best:\n";
    const double pct = best.step_s > 0 ? 100.0 * (c.step_s - best.step_s) / best.step_s : 0.0;
    out += Row("  %-48s %s %.5f s (%+.2f %%), bubble %.4f, peak %s\n", CandidateName(c).c_str(),
               ObjectiveField(r.objective), c.step_s, pct, c.bubble_ratio, FormatBytes(c.max_peak_bytes).c_str());
  }
  std::string headroom;
  if (r.memory_limit_bytes)
    headroom = " of " + FormatBytes(*r.memory_limit_bytes) + " (" +
               FormatBytes(*r.memory_limit_bytes - best.max_peak_bytes) + " free)";
  out += Row("chosen: %s\n", CandidateName(best).c_str());
  out += Row("  why: the smallest %s of %d feasible candidates: %.6f s, bubble %.4f; peak %s per rank%s\n",
             ObjectiveField(r.objective), feasible, best.step_s, best.bubble_ratio,
             FormatBytes(best.max_peak_bytes).c_str(), headroom.c_str());
  out += Row("  layers per stage: %s\n", FormatStageSizes(best.boundaries).c_str());
  if (r.dp_size > 1)
    out +=
        Row("  data parallel: %s = %d devices, global batch %lld sequences; gradient %s %.6f s per "
            "step on the busiest rank, %.6f s of it exposed (not hidden behind compute)\n",
            r.tp_size > 1 ? LayoutName(r.tp_size, r.pp_size, r.dp_size).c_str()
                          : Row("P=%d x D=%d", r.pp_size, r.dp_size).c_str(),
            r.tp_size * r.pp_size * r.dp_size, static_cast<long long>(best.batch.global_batch_size),
            r.distributed_optimizer ? "reduce-scatter + all-gather (ZeRO-1)" : "all-reduce", best.reduce_s,
            best.reduce_exposed_s);
  if (r.tp_size > 1)
    out +=
        Row("  tensor parallel: T=%d ranks share every layer%s; costs and bytes above are per TP rank and include "
            "the TP collectives\n",
            r.tp_size, r.sequence_parallel ? " (sequence parallel)" : "");
  for (const std::string& note : r.notes) out += "  note: " + note + "\n";
  out += BubbleWarning(r);
  return out;
}

nlohmann::json CandidatesToJson(const SearchResult& r) {
  nlohmann::json j;
  j["objective"] = ObjectiveField(r.objective);
  j["memory_limit_bytes"] = r.memory_limit_bytes ? nlohmann::json(*r.memory_limit_bytes) : nlohmann::json(nullptr);
  j["chosen"] = r.chosen;
  if (r.dp_size > 1) {
    j["dp_size"] = r.dp_size;
    j["distributed_optimizer"] = r.distributed_optimizer;
  }
  if (r.tp_size > 1) {
    j["tp_size"] = r.tp_size;
    j["sequence_parallel"] = r.sequence_parallel;
  }
  nlohmann::json list = nlohmann::json::array();
  for (const Candidate& c : r.candidates) {
    nlohmann::json e;
    e["schedule"] = c.schedule;
    e["v"] = c.virtual_stages;
    e["m"] = c.batch.num_microbatches;
    e["micro_batch_size"] = c.batch.micro_batch_size;
    e["recompute"] = c.recompute;
    e["feasible"] = c.feasible;
    if (!c.feasible) {
      e["reject"] = RejectKindName(c.reject);
      e["reason"] = c.reason;
    }
    if (c.simulated) {
      e["step_s"] = c.step_s;
      e["makespan_s"] = c.makespan_s;
      e["steady_step_s"] = c.steady_step_s;
      e["bubble_ratio"] = c.bubble_ratio;
      e["peak_memory_bytes"] = c.peak_bytes;
      if (r.dp_size > 1) {
        e["reduce_s"] = c.reduce_s;
        e["reduce_exposed_s"] = c.reduce_exposed_s;
      }
    }
    if (!c.boundaries.empty()) {
      std::vector<int> sizes;
      for (size_t s = 0; s + 1 < c.boundaries.size(); ++s) sizes.push_back(c.boundaries[s + 1] - c.boundaries[s]);
      e["stage_layers"] = sizes;
    }
    list.push_back(e);
  }
  j["candidates"] = list;
  if (r.min_pp) {
    j["smallest_feasible_pp"] = r.min_pp->pp_size;
    j["smaller_pp_reason"] = r.min_pp->smaller_reason;
  }
  return j;
}

std::string FormatDeviceSplits(const DeviceSplitSearch& search) {
  std::string out =
      Row("splits of %d devices into T tensor-parallel x P pipeline x D data-parallel ranks (best "
          "candidate of each):\n",
          search.num_devices);
  out += Row("  %-2s %-22s %-6s %-17s %2s %5s %3s %-9s %11s %9s %7s %11s %11s %9s\n", "", "layout", "ZeRO", "schedule",
             "v", "m", "b", "recompute", "step_s", "vs best", "bubble", "reduce_s", "exposed_s", "peak GiB");
  const double best_step =
      search.chosen >= 0
          ? search.splits[search.chosen].result.candidates[search.splits[search.chosen].result.chosen].step_s
          : 0.0;
  for (size_t k = 0; k < search.splits.size(); ++k) {
    const DeviceSplit& sp = search.splits[k];
    const char* mark = static_cast<int>(k) == search.chosen ? "*" : "";
    const std::string layout = LayoutName(sp.tp_size, sp.pp_size, sp.dp_size);
    const char* zero = sp.distributed_optimizer ? "ZeRO-1" : "-";
    if (!sp.feasible()) {
      out += Row("  %-2s %-22s %-6s %s%s\n", mark, layout.c_str(), zero,
                 sp.searched ? "" : "not searched: ", sp.reason.substr(0, sp.reason.find('\n')).c_str());
      continue;
    }
    const Candidate& c = sp.result.candidates[sp.result.chosen];
    const double pct = best_step > 0 ? 100.0 * (c.step_s - best_step) / best_step : 0.0;
    out += Row("  %-2s %-22s %-6s %-17s %2d %5d %3lld %-9s %11.5f %+8.2f%% %7.4f %11.5f %11.5f %9.2f\n", mark,
               layout.c_str(), zero, c.schedule.c_str(), c.virtual_stages, c.batch.num_microbatches,
               static_cast<long long>(c.batch.micro_batch_size), c.recompute.c_str(), c.step_s, pct, c.bubble_ratio,
               c.reduce_s, c.reduce_exposed_s, GiB(c.max_peak_bytes));
  }
  return out;
}

nlohmann::json DeviceSplitsToJson(const DeviceSplitSearch& search) {
  nlohmann::json j;
  j["num_devices"] = search.num_devices;
  j["chosen"] = search.chosen;
  nlohmann::json list = nlohmann::json::array();
  for (const DeviceSplit& sp : search.splits) {
    nlohmann::json e;
    e["tp_size"] = sp.tp_size;
    e["pp_size"] = sp.pp_size;
    e["dp_size"] = sp.dp_size;
    e["distributed_optimizer"] = sp.distributed_optimizer;
    e["sequence_parallel"] = sp.sequence_parallel;
    e["lower_bound_s"] = sp.lower_bound_s;
    e["feasible"] = sp.feasible();
    if (!sp.feasible()) {
      e["reason"] = sp.reason;
    } else {
      const Candidate& c = sp.result.candidates[sp.result.chosen];
      e["schedule"] = c.schedule;
      e["v"] = c.virtual_stages;
      e["m"] = c.batch.num_microbatches;
      e["micro_batch_size"] = c.batch.micro_batch_size;
      e["recompute"] = c.recompute;
      e["step_s"] = c.step_s;
      e["bubble_ratio"] = c.bubble_ratio;
      e["reduce_s"] = c.reduce_s;
      e["reduce_exposed_s"] = c.reduce_exposed_s;
      e["peak_memory_bytes"] = c.max_peak_bytes;
    }
    list.push_back(e);
  }
  j["splits"] = list;
  return j;
}

}  // namespace pw
