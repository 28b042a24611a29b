#include "viz/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "schedules/simulate.h"

namespace pw::viz {

double NiceStep(double min_step) {
  if (min_step <= 0) return 1;
  double p = std::pow(10.0, std::floor(std::log10(min_step)));
  for (double k : {1.0, 2.0, 5.0, 10.0})
    if (k * p >= min_step * (1 - 1e-9)) return k * p;
  return 10 * p;
}

std::string StagesText(const std::vector<int>& stages) {
  std::string s;
  for (int st : stages) s += (s.empty() ? "" : ",") + std::to_string(st);
  return s;
}

std::string FormatSeconds(double s) {
  double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a >= 1) return StrFormat("%.4g s", s);
  if (a >= 1e-3) return StrFormat("%.4g ms", s * 1e3);
  return StrFormat("%.4g \xC2\xB5s", s * 1e6);
}

std::string FormatMemory(const Timeline& t, int64_t bytes) {
  if (t.memory_unit_bytes > 1 || t.memory_unit_name != "B")
    return StrFormat("%.4g %s", double(bytes) / double(t.memory_unit_bytes), t.memory_unit_name.c_str());
  double b = double(bytes);
  if (std::fabs(b) >= 1024.0 * 1024 * 1024) return StrFormat("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (std::fabs(b) >= 1024.0 * 1024) return StrFormat("%.2f MiB", b / (1024.0 * 1024));
  if (std::fabs(b) >= 1024.0) return StrFormat("%.2f KiB", b / 1024.0);
  return StrFormat("%lld B", static_cast<long long>(bytes));
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// The stage whose message a SEND carries to, or a RECV comes from.
int PeerStage(const Action& a) {
  switch (a.type) {
    case ActionType::kSendF:
      return a.stage + 1;
    case ActionType::kRecvF:
      return a.stage - 1;
    case ActionType::kSendB:
      return a.stage - 1;
    case ActionType::kRecvB:
      return a.stage + 1;
    default:
      return a.stage;
  }
}

}  // namespace

Timeline TimelineFromSimulation(const Program& program, const StageCosts& costs, const SimResult& sim,
                                const std::string& title, const std::string& schedule,
                                std::optional<int64_t> memory_limit_bytes) {
  Timeline t;
  t.title = title;
  t.schedule = schedule;
  t.kind = "simulated";
  t.pp_size = program.pp_size;
  t.num_stages = program.num_stages;
  t.num_microbatches = program.num_microbatches;
  t.dp_size = program.dp_size;
  t.stage_to_rank = program.stage_to_rank;
  t.memory_limit_bytes = memory_limit_bytes;
  t.ranks.resize(program.pp_size);
  // Receives by (receiving stage, direction, microbatch) -> (rank, timing).
  std::map<std::tuple<int, int, int>, std::pair<int, ActionTiming>> recvs;
  for (int r = 0; r < program.pp_size; ++r) {
    TimelineRank& tr = t.ranks[r];
    tr.stages = program.StagesOfRank(r);
    for (size_t i = 0; i < program.ranks[r].size(); ++i) {
      const Action& a = program.ranks[r][i];
      const ActionTiming& at = sim.timing[r][i];
      TimelineBlock b{a, static_cast<int>(i), at.start, at.end};
      (IsCompute(a.type) ? tr.compute : tr.comm).push_back(b);
      if (IsRecv(a.type)) recvs[{a.stage, a.type == ActionType::kRecvF ? 0 : 1, a.microbatch}] = {r, at};
    }
    const RankResult& rr = sim.per_rank[r];
    tr.optimizer_s = rr.optimizer_s;
    tr.memory.push_back({0.0, rr.start_memory_bytes});
    tr.memory.insert(tr.memory.end(), rr.memory.begin(), rr.memory.end());
  }
  for (int r = 0; r < program.pp_size; ++r) {
    for (const TimelineBlock& b : t.ranks[r].comm) {
      if (!IsSend(b.action.type)) continue;
      bool fwd = b.action.type == ActionType::kSendF;
      int dst_stage = PeerStage(b.action);
      auto it = recvs.find({dst_stage, fwd ? 0 : 1, b.action.microbatch});
      if (it == recvs.end()) continue;  // cannot happen for a simulated lowered program
      const StageMemory& m = costs.memory[b.action.stage];
      double arrival = b.start + costs.comm.MessageSeconds(fwd ? m.send_forward : m.send_backward);
      TimelineMessage msg;
      msg.send = b.action;
      msg.recv = MakeAction(dst_stage, fwd ? ActionType::kRecvF : ActionType::kRecvB, b.action.microbatch);
      msg.src_rank = r;
      msg.dst_rank = it->second.first;
      msg.sent_s = b.start;
      msg.available_s = std::max(arrival, it->second.second.start);
      t.messages.push_back(msg);
    }
  }
  // A SEND lasts until its message arrives, a RECV until the data is there
  // (the trace format's meaning of their durations).
  std::map<std::tuple<int, int, int, int>, double> done;  // (rank, type, stage, mb) -> end
  for (const TimelineMessage& m : t.messages) {
    done[{m.src_rank, int(m.send.type), m.send.stage, m.send.microbatch}] = m.available_s;
    done[{m.dst_rank, int(m.recv.type), m.recv.stage, m.recv.microbatch}] = m.available_s;
  }
  for (int r = 0; r < program.pp_size; ++r)
    for (TimelineBlock& b : t.ranks[r].comm) {
      auto it = done.find({r, int(b.action.type), b.action.stage, b.action.microbatch});
      if (it != done.end()) b.end = std::max(b.start, it->second);
    }
  // Display memory in "stage activations" when the plan carries unit sizes
  // (no static bytes, every stage the same activation bytes).
  bool unit = !costs.memory.empty();
  for (const StageMemory& m : costs.memory)
    unit = unit && m.static_bytes == 0 && m.activation == costs.memory[0].activation && m.activation < 1024;
  if (unit) {
    t.memory_unit_bytes = costs.memory[0].activation;
    t.memory_unit_name = "stage activations";
  }
  ComputeTimelineMetrics(&t);
  return t;
}

void ComputeTimelineMetrics(Timeline* t) {
  t->makespan_s = 0;
  t->steady_step_s = 0;
  double sum_busy = 0;
  for (TimelineRank& tr : t->ranks) {
    tr.busy_s = 0;
    tr.first_compute_start_s = std::numeric_limits<double>::infinity();
    tr.last_compute_end_s = 0;
    for (const TimelineBlock& b : tr.compute) {
      tr.busy_s += b.end - b.start;
      tr.first_compute_start_s = std::min(tr.first_compute_start_s, b.start);
      tr.last_compute_end_s = std::max(tr.last_compute_end_s, b.end);
      t->makespan_s = std::max(t->makespan_s, b.end);
    }
    double reduce_end = 0;  // a rank's step also waits for its gradient reductions (simulate.h)
    for (const TimelineBlock& b : tr.comm) {
      t->makespan_s = std::max(t->makespan_s, b.end);
      if (IsReduceGrad(b.action.type)) reduce_end = std::max(reduce_end, b.end);
    }
    if (tr.compute.empty()) tr.first_compute_start_s = 0;
    // The optimizer step follows the rank's last action and reductions
    // (rule 11): busy time that ends the rank's step.
    double end = std::max(tr.last_compute_end_s, reduce_end);
    if (tr.optimizer_s > 0) {
      for (const TimelineBlock& b : tr.comm) end = std::max(end, b.start);  // a message's post (simulate.cc)
      tr.optimizer_start_s = end;
      end += tr.optimizer_s;
      tr.busy_s += tr.optimizer_s;
      t->makespan_s = std::max(t->makespan_s, end);
    }
    t->steady_step_s = std::max(t->steady_step_s, end - tr.first_compute_start_s);
    sum_busy += tr.busy_s;
    tr.peak_memory_bytes = 0;
    for (size_t i = 0; i < tr.memory.size(); ++i)
      tr.peak_memory_bytes = i == 0 ? tr.memory[i].bytes : std::max(tr.peak_memory_bytes, tr.memory[i].bytes);
  }
  for (TimelineRank& tr : t->ranks) tr.idle_s = t->makespan_s - tr.busy_s;
  t->bubble_ratio = BubbleRatio(sum_busy, t->pp_size, t->makespan_s);
}

Program TimelineProgram(const Timeline& t) {
  Program p;
  p.pp_size = t.pp_size;
  p.num_stages = t.num_stages;
  p.num_microbatches = t.num_microbatches;
  p.stage_to_rank = t.stage_to_rank;
  p.ranks.resize(t.pp_size);
  for (int r = 0; r < t.pp_size; ++r) {
    std::vector<TimelineBlock> all = t.ranks[r].compute;
    all.insert(all.end(), t.ranks[r].comm.begin(), t.ranks[r].comm.end());
    std::stable_sort(all.begin(), all.end(),
                     [](const TimelineBlock& a, const TimelineBlock& b) { return a.index < b.index; });
    for (const TimelineBlock& b : all) {
      p.ranks[r].push_back(b.action);
      if (IsReduceGrad(b.action.type)) p.dp_size = std::max(p.dp_size, std::max(t.dp_size, 2));
    }
  }
  return p;
}

std::vector<CriticalStep> CriticalPath(const Timeline& t) {
  // Compute blocks by (stage, kind, microbatch): kind 0 = F, 1 = B/I.
  std::map<std::tuple<int, int, int>, std::pair<int, int>> where;  // -> (rank, compute index)
  int last_r = -1, last_i = -1;
  double last_end = -1;
  for (int r = 0; r < t.pp_size; ++r) {
    const auto& c = t.ranks[r].compute;
    for (int i = 0; i < static_cast<int>(c.size()); ++i) {
      const Action& a = c[i].action;
      if (a.type == ActionType::kF) where[{a.stage, 0, a.microbatch}] = {r, i};
      if (IsInputBackward(a.type)) where[{a.stage, 1, a.microbatch}] = {r, i};
      if (c[i].end > last_end) {
        last_end = c[i].end;
        last_r = r;
        last_i = i;
      }
    }
  }
  std::map<std::tuple<int, int, int>, double> msg_avail;
  for (const TimelineMessage& m : t.messages)
    msg_avail[{m.recv.stage, m.recv.type == ActionType::kRecvF ? 0 : 1, m.recv.microbatch}] = m.available_s;

  std::vector<CriticalStep> path;
  int r = last_r, i = last_i;
  while (r >= 0) {
    const TimelineBlock& b = t.ranks[r].compute[i];
    CriticalStep step{r, b.action, b.start, b.end, "start of step"};
    int next_r = -1, next_i = -1;
    double best = -std::numeric_limits<double>::infinity();
    if (i > 0) {
      best = t.ranks[r].compute[i - 1].end;
      next_r = r;
      next_i = i - 1;
      step.waited_for = "previous action on the rank";
    }
    const Action& a = b.action;
    int kind = -1, producer_stage = -1;
    if (a.type == ActionType::kF && a.stage > 0) kind = 0, producer_stage = a.stage - 1;
    if (IsInputBackward(a.type) && a.stage + 1 < t.num_stages) kind = 1, producer_stage = a.stage + 1;
    if (kind >= 0) {
      auto it = where.find({producer_stage, kind, a.microbatch});
      if (it != where.end() && it->second.first != r) {
        double when = t.ranks[it->second.first].compute[it->second.second].end;
        auto m = msg_avail.find({a.stage, kind, a.microbatch});
        if (m != msg_avail.end()) when = m->second;
        if (when > best) {
          best = when;
          next_r = it->second.first;
          next_i = it->second.second;
          step.waited_for = "input from rank " + std::to_string(next_r);
        }
      }
    }
    path.push_back(step);
    r = next_r;
    i = next_i;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace pw::viz
