#include "executor/runtime/measured_trace.h"

#include "base/file_io.h"
#include "executor/comm/agree.h"

namespace pw::exec {

namespace {

// Rank `rank`'s spans as the writer's input: action i of its list with
// spans[i]'s times (at most min(list, spans) of them).
TraceRank RankSpans(const Program& program, int rank, const std::vector<ActionSpan>& spans) {
  TraceRank tr;
  tr.rank = rank;
  tr.stages = program.StagesOfRank(rank);
  const std::vector<Action>& actions = program.ranks[rank];
  for (size_t i = 0; i < actions.size() && i < spans.size(); ++i)
    tr.spans.push_back({actions[i], static_cast<int>(i), spans[i].start_s, spans[i].end_s});
  return tr;
}

TraceHeader ProgramHeader(const Program& program) {
  TraceHeader h;
  h.kind = "measured";
  h.pp_size = program.pp_size;
  h.num_stages = program.num_stages;
  h.num_microbatches = program.num_microbatches;
  h.stage_to_rank = program.stage_to_rank;
  return h;
}

}  // namespace

// Rank 0's half of WriteMeasuredTrace: every rank's gathered span times
// (`all`, in rank order) into the file at `path`.
static Status WriteGathered(const Plan& plan, const Program& program, const std::vector<std::string>& all,
                            const std::string& path, const std::string& title);

int64_t MessageFlowId(const Program& program, const Action& a) {
  return TraceFlowId(a, program.num_stages, program.num_microbatches);
}

TraceHeader MeasuredTraceHeader(const Plan& plan, const std::string& title) {
  TraceHeader h = ProgramHeader(PlanProgram(plan));
  h.schedule = plan.schedule;
  h.memory_limit_bytes = plan.memory_limit_bytes;
  h.plan_hash = PlanHash(plan);
  h.title = title;
  return h;
}

nlohmann::json RankTraceEvents(const Program& program, int rank, const std::vector<ActionSpan>& spans) {
  return nlohmann::json(TraceRankEvents(ProgramHeader(program), RankSpans(program, rank, spans)));
}

Status WriteMeasuredTrace(const Plan& plan, const std::vector<ActionSpan>& spans, Communicator& comm,
                          const std::string& path, const std::string& title) {
  const Program program = PlanProgram(plan);
  const int rank = comm.rank();
  const int ranks = static_cast<int>(program.ranks.size());
  // Each rank sends "[[start_s, end_s], ...]" (doubles print exactly), or
  // "!why" when it has no step to contribute.
  std::string mine;
  if (rank < 0 || rank >= ranks || spans.size() != program.ranks[rank].size()) {
    mine = "!rank " + std::to_string(rank) + ": " + std::to_string(spans.size()) + " measured actions for a list of " +
           (rank >= 0 && rank < ranks ? std::to_string(program.ranks[rank].size()) : std::string("?")) +
           " (no step was traced)";
  } else {
    nlohmann::json times = nlohmann::json::array();
    for (const ActionSpan& s : spans) times.push_back({s.start_s, s.end_s});
    mine = times.dump();
  }
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.AllGather(mine));
  for (const std::string& part : all)
    if (!part.empty() && part[0] == '!') return Status::InvalidArgument("--trace " + path + ": " + part.substr(1));
  // Rank 0 writes; then every rank learns its result, so a failed write
  // stops all ranks together instead of leaving the others waiting for rank 0.
  Status written = rank == 0 ? WriteGathered(plan, program, all, path, title) : Status::Ok();
  return AgreeOnStatus(written, comm);
}

static Status WriteGathered(const Plan& plan, const Program& program, const std::vector<std::string>& all,
                            const std::string& path, const std::string& title) {
  const int ranks = static_cast<int>(program.ranks.size());
  if (static_cast<int>(all.size()) != ranks)
    return Status::InvalidArgument("--trace " + path + ": " + std::to_string(all.size()) +
                                   " ranks took part, the plan has " + std::to_string(ranks));
  std::vector<TraceRank> trace_ranks;
  for (int r = 0; r < ranks; ++r) {
    std::vector<ActionSpan> got;
    const nlohmann::json times = nlohmann::json::parse(all[r], nullptr, /*allow_exceptions=*/false);
    if (times.is_array())
      for (const auto& t : times)
        if (t.is_array() && t.size() == 2 && t[0].is_number() && t[1].is_number())
          got.push_back({static_cast<int>(got.size()), t[0].get<double>(), t[1].get<double>()});
    if (got.size() != program.ranks[r].size())
      return Status::InvalidArgument("--trace " + path + ": rank " + std::to_string(r) + " sent " +
                                     std::to_string(got.size()) + " measured actions for a list of " +
                                     std::to_string(program.ranks[r].size()));
    trace_ranks.push_back(RankSpans(program, r, got));
  }
  Status st = WriteFileAtomic(path, TraceJson(MeasuredTraceHeader(plan, title), trace_ranks));
  if (!st.ok()) return st.WithContext("--trace " + path);
  return Status::Ok();
}

}  // namespace pw::exec
