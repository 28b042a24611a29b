#include "plan/plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/hash.h"

namespace pw {

Program PlanProgram(const Plan& plan) {
  Program p;
  p.pp_size = plan.pp_size;
  p.num_stages = plan.num_stages;
  p.num_microbatches = plan.num_microbatches;
  p.dp_size = plan.dp_size;
  p.stage_to_rank = plan.stage_to_rank;
  p.ranks = plan.ranks;
  return p;
}

StageCosts PlanCosts(const Plan& plan) {
  StageCosts c;
  for (const PlanStage& s : plan.stages) {
    c.stages.push_back(s.cost);
    c.memory.push_back(s.memory);
  }
  c.comm = plan.comm;
  return c;
}

std::vector<PlanLayer> PlanLayers(const ModelConfig& model) {
  std::vector<PlanLayer> out;
  for (const LayerSpec& l : BuildLayerList(model)) out.push_back({l.name, l.kind, l.params});
  return out;
}

Plan MakePlan(const std::string& schedule, const Program& lowered, const StageCosts& costs, const SimResult& sim,
              std::optional<int64_t> memory_limit_bytes) {
  Plan plan;
  plan.schedule = schedule;
  plan.pp_size = lowered.pp_size;
  plan.num_stages = lowered.num_stages;
  plan.num_microbatches = lowered.num_microbatches;
  plan.dp_size = lowered.dp_size;
  plan.stage_to_rank = lowered.stage_to_rank;
  for (int s = 0; s < lowered.num_stages; ++s) {
    PlanStage st;
    st.index = s;
    st.rank = lowered.stage_to_rank[s];
    st.layer_begin = s;
    st.layer_end = s + 1;
    st.cost = costs.stages[s];
    st.memory = costs.memory[s];
    plan.stages.push_back(st);
  }
  plan.comm = costs.comm;
  plan.memory_limit_bytes = memory_limit_bytes;
  plan.ranks = lowered.ranks;
  plan.predicted.makespan_s = sim.makespan_s;
  plan.predicted.steady_step_s = sim.steady_step_s;
  plan.predicted.bubble_ratio = sim.bubble_ratio;
  for (int r = 0; r < lowered.pp_size; ++r)
    plan.predicted.per_rank.push_back({r, sim.per_rank[r].busy_s, sim.per_rank[r].peak_memory_bytes});
  return plan;
}

std::string PlanHash(const Plan& plan) { return HashHex(Fnv1a64(PlanToJson(plan))); }

}  // namespace pw
