#include "schedules/registry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "base/limits.h"
#include "schedules/generators/generators.h"
#include "schedules/simulate.h"

namespace pw {

namespace {

using GenerateFn = StatusOr<Program> (*)(const ScheduleRequest&);

struct Entry {
  ScheduleInfo info;
  GenerateFn generate;
  std::vector<std::string> aliases;  // compared after Normalize()
};

const std::vector<Entry>& Registry() {
  static const std::vector<Entry> registry = {
      {{"gpipe", "GPipe", Placement::kLoop, 1, 1, 1, false, "Huang et al. 2019"}, GenerateGPipe, {"gpipe"}},
      {{"1f1b", "1F1B", Placement::kLoop, 1, 1, 1, false, "Narayanan et al. SC'21 §2.2.1 (PipeDream-Flush)"},
       Generate1F1B,
       {"1f1b", "pipedreamflush", "dapple"}},
      {{"interleaved-1f1b", "Interleaved 1F1B", Placement::kLoop, 2, 1, 0, false,
        "Narayanan et al. SC'21 §2.2.2; Megatron-LM depth-first order"},
       GenerateInterleaved1F1B,
       {"interleaved1f1b", "interleaved"}},
      {{"looped-bfs", "Looped BFS", Placement::kLoop, 2, 1, 0, false, "Lamy-Poirier 2022 (arXiv:2211.05953)"},
       GenerateLoopedBFS,
       {"loopedbfs"}},
      {{"zb-h1", "ZB-H1", Placement::kLoop, 1, 1, 1, true, "Qi et al. 2024 (zero bubble) §2.3, Table 2"},
       GenerateZBH1,
       {"zbh1", "zb1p"}},
      {{"zb-h2", "ZB-H2", Placement::kLoop, 1, 1, 1, true, "Qi et al. 2024 (zero bubble) §2.3, Table 2"},
       GenerateZBH2,
       {"zbh2", "zb2p"}},
      {{"zb-v", "ZB-V", Placement::kV, 2, 2, 2, true, "Qi et al. 2024 (zero bubble) §6", true},
       GenerateZBV,
       {"zbv", "zbvzerobubble"}},
      {{"zb-auto", "ZB-auto", Placement::kLoop, 1, 1, 1, true, "Qi et al. 2024 (zero bubble) §3.1 heuristic", true},
       GenerateZBAuto,
       {"zbauto", "auto"}},
      {{"v-half", "V-Half", Placement::kV, 2, 2, 2, true,
        "Qi et al. 2024 (controllable memory, arXiv 2405.15362) §3-§4 building block"},
       GenerateVHalf,
       {"vhalf"}},
      {{"v-min", "V-Min", Placement::kV, 2, 2, 2, true,
        "Qi et al. 2024 (controllable memory, arXiv 2405.15362) §3-§4 building block"},
       GenerateVMin,
       {"vmin"}},
      {{"v-auto", "V-auto", Placement::kV, 2, 2, 2, true,
        "Qi et al. 2024 (controllable memory, arXiv 2405.15362) §3-§4, App. A adaptive building-block search", true},
       GenerateVAuto,
       {"vauto"}},
      {{"interleaved-zb", "Interleaved ZB", Placement::kLoop, 2, 2, 0, true,
        "Narayanan et al. SC'21 §2.2 placement + Qi et al. 2024 (zero bubble) §3.1 W placement (PyTorch "
        "ScheduleInterleavedZeroBubble family)",
        true},
       GenerateInterleavedZB,
       {"interleavedzb", "interleavedzerobubble"}},
      {{"dualpipev", "DualPipeV", Placement::kV, 2, 2, 2, true,
        "DeepSeek-V3 report (arXiv 2412.19437) §3.2.1 DualPipe, cut in half as deepseek-ai/DualPipe dualpipev.py "
        "(PyTorch ScheduleDualPipeV)"},
       GenerateDualPipeV,
       {"dualpipev"}},
  };
  return registry;
}

std::string Normalize(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '-' && c != '_' && c != ' ') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const Entry* Find(const std::string& name) {
  std::string n = Normalize(name);
  for (const Entry& e : Registry()) {
    if (Normalize(e.info.name) == n) return &e;
    for (const auto& a : e.aliases)
      if (a == n) return &e;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> ScheduleNames() {
  std::vector<std::string> names;
  for (const Entry& e : Registry()) names.push_back(e.info.name);
  return names;
}

StatusOr<ScheduleInfo> FindSchedule(const std::string& name) {
  const Entry* e = Find(name);
  if (!e) {
    std::string known;
    for (const auto& n : ScheduleNames()) known += (known.empty() ? "" : ", ") + n;
    return Status::NotFound("unknown schedule '" + name + "' (--schedule); known: " + known);
  }
  return e->info;
}

Program MakeEmptyProgram(const ScheduleRequest& req, int virtual_stages, Placement placement) {
  Program p;
  p.pp_size = req.pp_size;
  p.num_stages = req.pp_size * virtual_stages;
  p.num_microbatches = req.num_microbatches;
  p.stage_to_rank = MakeStageToRank(placement, req.pp_size, virtual_stages);
  p.ranks.resize(req.pp_size);
  return p;
}

Program OneMicrobatchProgram(const ScheduleRequest& req, int virtual_stages, Placement placement, bool split_backward) {
  ScheduleRequest one = req;
  one.num_microbatches = 1;
  Program p = MakeEmptyProgram(one, virtual_stages, placement);
  for (int r = 0; r < p.pp_size; ++r) {
    const std::vector<int> stages = p.StagesOfRank(r);
    auto& list = p.ranks[r];
    for (int s : stages) list.push_back(MakeAction(s, ActionType::kF, 0));
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      if (!split_backward) {
        list.push_back(MakeAction(*it, ActionType::kB, 0));
        continue;
      }
      list.push_back(MakeAction(*it, ActionType::kI, 0));
      list.push_back(MakeAction(*it, ActionType::kW, 0));
    }
  }
  return p;
}

bool HasMemoryLimit(const ScheduleRequest& req) { return req.memory_limit || !req.rank_memory_limits.empty(); }

double RankMemoryLimit(const ScheduleRequest& req, int rank) {
  if (!req.rank_memory_limits.empty()) return req.rank_memory_limits[rank];
  if (req.memory_limit) return *req.memory_limit;
  return std::numeric_limits<double>::infinity();
}

std::string RankLimitText(const ScheduleRequest& req, int rank) {
  const double limit = RankMemoryLimit(req, rank);
  // No limit (infinity), or one past int64 (a double cannot convert): said
  // in words, never converted.
  if (!(limit < 9.2e18)) return std::isinf(limit) ? "no memory limit" : "--memory-limit " + std::to_string(limit);
  const std::string bytes = std::to_string(static_cast<int64_t>(limit));
  if (req.rank_memory_limits.empty()) return "--memory-limit " + bytes;
  return "the " + bytes + " bytes that --memory-limit leaves rank " + std::to_string(rank) + " for activations";
}

namespace {

// Normalizes `request` (canonical name, default v, unit costs if none) and
// checks its shape; `entry` receives the family.
StatusOr<ScheduleRequest> Resolve(const ScheduleRequest& request, const Entry** entry) {
  const Entry* e = Find(request.schedule);
  if (!e) return FindSchedule(request.schedule).status();
  *entry = e;
  const ScheduleInfo& info = e->info;
  ScheduleRequest req = request;
  req.schedule = info.name;
  if (req.pp_size < 1) return Status::InvalidArgument("--pp must be >= 1, got " + std::to_string(req.pp_size));
  if (req.num_microbatches < 1)
    return Status::InvalidArgument("--num-microbatches must be >= 1, got " + std::to_string(req.num_microbatches));
  if (req.virtual_stages == 0) req.virtual_stages = info.default_virtual_stages;
  const int v = req.virtual_stages;
  PW_RETURN_IF_ERROR(limits::CheckRange("--pp", req.pp_size, limits::kMaxRanks, "pipeline ranks"));
  PW_RETURN_IF_ERROR(limits::CheckRange("--num-microbatches", req.num_microbatches, limits::kMaxMicrobatches,
                                        "microbatches per step"));
  PW_RETURN_IF_ERROR(limits::CheckRange("--virtual-stages", v, limits::kMaxVirtualStages, "stages per rank"));
  PW_RETURN_IF_ERROR(limits::CheckRange("P*v = --pp x --virtual-stages", int64_t{req.pp_size} * v, limits::kMaxStages,
                                        "global stages"));
  PW_RETURN_IF_ERROR(limits::CheckRange("S*m = stages x --num-microbatches",
                                        int64_t{req.pp_size} * v * req.num_microbatches, limits::kMaxStageMicrobatches,
                                        "stage-microbatch pairs: per-pair arrays and ~6 actions each"));
  if (v < info.min_virtual_stages || (info.max_virtual_stages > 0 && v > info.max_virtual_stages)) {
    std::string range = info.min_virtual_stages == info.max_virtual_stages
                            ? "exactly " + std::to_string(info.min_virtual_stages)
                            : std::to_string(info.min_virtual_stages) + " or more";
    return Status::InvalidArgument(info.display_name + " needs " + range + " stages per rank (--virtual-stages), got " +
                                   std::to_string(v));
  }
  const int S = req.pp_size * v;
  if (req.costs.stages.empty()) req.costs = UniformCosts(S);
  if (static_cast<int>(req.costs.stages.size()) != S || static_cast<int>(req.costs.memory.size()) != S)
    return Status::InvalidArgument("--costs: expected costs for " + std::to_string(S) + " stages (P*v), got " +
                                   std::to_string(req.costs.stages.size()));
  if (!req.rank_memory_limits.empty() && static_cast<int>(req.rank_memory_limits.size()) != req.pp_size)
    return Status::InvalidArgument("--memory-limit: expected a limit for each of the " + std::to_string(req.pp_size) +
                                   " ranks, got " + std::to_string(req.rank_memory_limits.size()));
  return req;
}

// The one memory-limit check (see GenerateSchedule): Infeasible names the
// rank that exceeds its limit the most, its activation peak and the limit.
Status CheckMemoryLimit(const Program& program, const ScheduleRequest& req, const ScheduleInfo& info) {
  if (!HasMemoryLimit(req)) return Status::Ok();
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(program, req.costs));
  int worst = -1;
  double worst_excess = 0;
  for (int r = 0; r < program.pp_size; ++r) {
    const int64_t peak = sim.per_rank[r].peak_memory_bytes - sim.per_rank[r].start_memory_bytes;
    const double excess = static_cast<double>(peak) - RankMemoryLimit(req, r);
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = r;
    }
  }
  if (worst < 0) return Status::Ok();
  std::string adaptive;
  for (const Entry& e : Registry())
    if (e.info.memory_adaptive && e.info.name != info.name) adaptive += (adaptive.empty() ? "" : ", ") + e.info.name;
  const int64_t peak = sim.per_rank[worst].peak_memory_bytes - sim.per_rank[worst].start_memory_bytes;
  return Status::Infeasible(
      info.display_name + " needs " + std::to_string(peak) + " bytes of activation memory on rank " +
      std::to_string(worst) + ", over " + RankLimitText(req, worst) +
      " (activation bytes per rank, static bytes excluded); raise "
      "--memory-limit" +
      (adaptive.empty() ? std::string() : " or use a schedule that fits its order to the limit (" + adaptive + ")"));
}

}  // namespace

StatusOr<StageCosts> RequestCosts(const ScheduleRequest& req) {
  PW_ASSIGN_OR_RETURN(ScheduleInfo info, FindSchedule(req.schedule));
  int v = req.virtual_stages > 0 ? req.virtual_stages : info.default_virtual_stages;
  if (!req.costs.stages.empty()) return req.costs;
  return UniformCosts(req.pp_size * v);
}

StatusOr<Program> GenerateSchedule(const ScheduleRequest& request) {
  const Entry* e = nullptr;
  PW_ASSIGN_OR_RETURN(ScheduleRequest req, Resolve(request, &e));
  PW_ASSIGN_OR_RETURN(Program p, e->generate(req));
  PW_RETURN_IF_ERROR(CheckMemoryLimit(p, req, e->info));
  return p;
}

StatusOr<Program> OneMicrobatchOrder(const ScheduleRequest& request) {
  ScheduleRequest one = request;
  one.num_microbatches = 1;
  one.memory_limit.reset();
  one.rank_memory_limits.clear();
  const Entry* e = nullptr;
  PW_ASSIGN_OR_RETURN(ScheduleRequest req, Resolve(one, &e));
  return OneMicrobatchProgram(req, req.virtual_stages, e->info.placement, e->info.split_backward);
}

}  // namespace pw
