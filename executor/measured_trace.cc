#include "executor/measured_trace.h"

#include "schedules/trace_format.h"

namespace pw::exec {

int64_t MessageFlowId(const Program& program, const Action& a) {
  int sender = 0, direction = 0;
  switch (a.type) {
    case ActionType::kSendF: sender = a.stage; direction = 0; break;
    case ActionType::kRecvF: sender = a.stage - 1; direction = 0; break;
    case ActionType::kSendB: sender = a.stage; direction = 1; break;
    case ActionType::kRecvB: sender = a.stage + 1; direction = 1; break;
    default: return 0;
  }
  return 1 + (static_cast<int64_t>(direction) * program.num_stages + sender) * program.num_microbatches + a.microbatch;
}

nlohmann::json RankTraceEvents(const Program& program, int rank, const std::vector<ActionSpan>& spans) {
  using nlohmann::json;
  json events = json::array();
  std::string stages;
  for (int s : program.StagesOfRank(rank)) stages += (stages.empty() ? "" : ",") + std::to_string(s);
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank},
                    {"args", {{"name", "rank " + std::to_string(rank) + " (stages " + stages + ")"}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", kTraceComputeTid},
                    {"args", {{"name", "compute"}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", kTraceCommTid},
                    {"args", {{"name", "comm"}}}});
  const std::vector<Action>& actions = program.ranks[rank];
  for (size_t i = 0; i < actions.size() && i < spans.size(); ++i) {
    const Action& a = actions[i];
    const std::string name = a.ToString();
    const bool compute = a.type == ActionType::kF || a.type == ActionType::kB || a.type == ActionType::kI ||
                         a.type == ActionType::kW;
    const double ts = spans[i].start_s * kTraceMicrosPerSecond;
    const double dur = std::max(0.0, spans[i].end_s - spans[i].start_s) * kTraceMicrosPerSecond;
    json e = {{"name", name},
              {"cat", compute ? name.substr(std::to_string(a.stage).size(), 1) : std::string("comm")},
              {"ph", "X"},
              {"pid", rank},
              {"tid", compute ? kTraceComputeTid : kTraceCommTid},
              {"ts", ts},
              {"dur", dur},
              {"args", {{"action", name}, {"stage", a.stage}, {"microbatch", a.microbatch}, {"index", i}}}};
    if (!compute) {
      e["bind_id"] = MessageFlowId(program, a);
      if (a.type == ActionType::kSendF || a.type == ActionType::kSendB)
        e["flow_out"] = true;
      else
        e["flow_in"] = true;
    }
    events.push_back(std::move(e));
  }
  return events;
}

Status WriteMeasuredTrace(const Plan& plan, const std::vector<ActionSpan>& spans, Communicator& comm,
                          const std::string& path, const std::string& title) {
  const Program program = PlanProgram(plan);
  const int rank = comm.rank();
  std::string mine;
  if (rank < 0 || rank >= static_cast<int>(program.ranks.size()) || spans.size() != program.ranks[rank].size())
    mine = "!rank " + std::to_string(rank) + ": " + std::to_string(spans.size()) + " measured actions for a list of " +
           (rank >= 0 && rank < static_cast<int>(program.ranks.size()) ? std::to_string(program.ranks[rank].size())
                                                                      : std::string("?")) +
           " (no step was traced)";
  else
    mine = RankTraceEvents(program, rank, spans).dump();
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.AllGather(mine));
  for (const std::string& part : all)
    if (!part.empty() && part[0] == '!') return Status::InvalidArgument("--trace " + path + ": " + part.substr(1));
  if (rank != 0) return Status::Ok();
  nlohmann::json doc;
  doc["displayTimeUnit"] = "ms";
  doc["otherData"] = {{"format", kTraceFormat},
                      {"version", kTraceVersion},
                      {"kind", "measured"},
                      {"schedule", plan.schedule},
                      {"pp_size", plan.pp_size},
                      {"num_stages", plan.num_stages},
                      {"num_microbatches", plan.num_microbatches},
                      {"stage_to_rank", plan.stage_to_rank},
                      {"memory_limit_bytes", plan.memory_limit_bytes ? nlohmann::json(*plan.memory_limit_bytes)
                                                                     : nlohmann::json(nullptr)},
                      {"plan_hash", PlanHash(plan)},
                      {"title", title}};
  nlohmann::json events = nlohmann::json::array();
  for (const std::string& part : all)
    for (auto& e : nlohmann::json::parse(part)) events.push_back(std::move(e));
  doc["traceEvents"] = std::move(events);
  Status st = WriteFileAtomic(path, doc.dump(1) + "\n");
  if (!st.ok()) return st.WithContext("--trace " + path);
  return Status::Ok();
}

}  // namespace pw::exec
