#include "schedules/registry.h"

#include <algorithm>
#include <cctype>

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
      {{"zb-v", "ZB-V", Placement::kV, 2, 2, 2, true, "Qi et al. 2024 (zero bubble) §6"},
       GenerateZBV,
       {"zbv", "zbvzerobubble"}},
      {{"zb-auto", "ZB-auto", Placement::kLoop, 1, 1, 1, true, "Qi et al. 2024 (zero bubble) §3.1 heuristic"},
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

Status CheckActivationLimit(const Program& program, const ScheduleRequest& req, const std::string& display_name,
                            const std::string& advice) {
  if (!req.memory_limit) return Status::Ok();
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(program, req.costs));
  int64_t need = 0;
  int worst = 0;
  for (int r = 0; r < program.pp_size; ++r) {
    int64_t peak = sim.per_rank[r].peak_memory_bytes - sim.per_rank[r].start_memory_bytes;
    if (peak > need) {
      need = peak;
      worst = r;
    }
  }
  if (static_cast<double>(need) <= *req.memory_limit) return Status::Ok();
  return Status::Infeasible(display_name + " needs " + std::to_string(need) + " bytes of activation memory on rank " +
                            std::to_string(worst) + " but --memory-limit is " +
                            std::to_string(static_cast<int64_t>(*req.memory_limit)) + "; raise --memory-limit or " +
                            advice);
}

StatusOr<StageCosts> RequestCosts(const ScheduleRequest& req) {
  PW_ASSIGN_OR_RETURN(ScheduleInfo info, FindSchedule(req.schedule));
  int v = req.virtual_stages > 0 ? req.virtual_stages : info.default_virtual_stages;
  if (!req.costs.stages.empty()) return req.costs;
  return UniformCosts(req.pp_size * v);
}

StatusOr<Program> GenerateSchedule(const ScheduleRequest& request) {
  const Entry* e = Find(request.schedule);
  if (!e) return FindSchedule(request.schedule).status();
  const ScheduleInfo& info = e->info;
  ScheduleRequest req = request;
  req.schedule = info.name;
  if (req.pp_size < 1) return Status::InvalidArgument("--pp must be >= 1, got " + std::to_string(req.pp_size));
  if (req.num_microbatches < 1)
    return Status::InvalidArgument("--num-microbatches must be >= 1, got " + std::to_string(req.num_microbatches));
  if (req.virtual_stages == 0) req.virtual_stages = info.default_virtual_stages;
  const int v = req.virtual_stages;
  if (v < info.min_virtual_stages || (info.max_virtual_stages > 0 && v > info.max_virtual_stages)) {
    std::string range = info.min_virtual_stages == info.max_virtual_stages
                            ? "exactly " + std::to_string(info.min_virtual_stages)
                            : std::to_string(info.min_virtual_stages) + " or more";
    return Status::InvalidArgument(info.display_name + " needs " + range +
                                   " stages per rank (--virtual-stages), got " + std::to_string(v));
  }
  const int S = req.pp_size * v;
  if (req.costs.stages.empty()) req.costs = UniformCosts(S);
  if (static_cast<int>(req.costs.stages.size()) != S || static_cast<int>(req.costs.memory.size()) != S)
    return Status::InvalidArgument("--costs: expected costs for " + std::to_string(S) + " stages (P*v), got " +
                                   std::to_string(req.costs.stages.size()));
  PW_ASSIGN_OR_RETURN(Program p, e->generate(req));
  return p;
}

}  // namespace pw
