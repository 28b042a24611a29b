#include "schedules/lower.h"

#include <queue>
#include <tuple>

#include "schedules/simulate.h"
#include "schedules/validate.h"

namespace pw {

namespace {

// The cross-rank messages a compute action produces: (action to place on the
// producer, action to place on the consumer, consumer's compute).
struct Message {
  Action send, recv, consumer;
};

// The message produced by a compute `a` that is not a pair (at most one: F
// sends forward, I/B backward).
bool ProducedMessage(const Program& p, const Action& a, Message* msg) {
  const int s = a.stage, mb = a.microbatch;
  if (a.type == ActionType::kF && s + 1 < p.num_stages && p.stage_to_rank[s + 1] != p.stage_to_rank[s]) {
    msg->send = MakeAction(s, ActionType::kSendF, mb);
    msg->recv = MakeAction(s + 1, ActionType::kRecvF, mb);
    msg->consumer = MakeAction(s + 1, ActionType::kF, mb);
    return true;
  }
  if (IsInputBackward(a.type) && s > 0 && p.stage_to_rank[s - 1] != p.stage_to_rank[s]) {
    msg->send = MakeAction(s, ActionType::kSendB, mb);
    msg->recv = MakeAction(s - 1, ActionType::kRecvB, mb);
    msg->consumer = MakeAction(s - 1, ActionType::kB, mb);  // B or I: resolved by position lookup
    return true;
  }
  return false;
}

// Messages produced by compute `a` into out[0..n): up to two for an
// OVERLAP_F_B (its F half's, then its B half's), else up to one.
int ProducedMessages(const Program& p, const Action& a, Message out[2]) {
  if (!IsOverlap(a.type)) return ProducedMessage(p, a, &out[0]) ? 1 : 0;
  int n = 0;
  if (ProducedMessage(p, ForwardHalf(a), &out[n])) ++n;
  if (ProducedMessage(p, BackwardHalf(a), &out[n])) ++n;
  return n;
}

Program EmptyLike(const Program& p) {
  Program out = p;
  for (auto& r : out.ranks) {
    r.clear();
  }
  return out;
}

StatusOr<Program> LowerJustInTime(const Program& p) {
  Program out = EmptyLike(p);
  for (int r = 0; r < p.pp_size; ++r) {
    for (const Action& whole : p.ranks[r]) {
      // A pair receives the inputs of both halves before it and sends the
      // outputs of both after it.
      const int halves = IsOverlap(whole.type) ? 2 : 1;
      for (int h = 0; h < halves; ++h) {
        const Action a = h == 0 ? ForwardHalf(whole) : BackwardHalf(whole);
        const int s = a.stage, mb = a.microbatch;
        if (a.type == ActionType::kF && s > 0 && p.stage_to_rank[s - 1] != r)
          out.ranks[r].push_back(MakeAction(s, ActionType::kRecvF, mb));
        if (IsInputBackward(a.type) && s + 1 < p.num_stages && p.stage_to_rank[s + 1] != r)
          out.ranks[r].push_back(MakeAction(s, ActionType::kRecvB, mb));
      }
      out.ranks[r].push_back(whole);
      Message msgs[2];
      const int n = ProducedMessages(p, whole, msgs);
      for (int k = 0; k < n; ++k) out.ranks[r].push_back(msgs[k].send);
    }
  }
  return out;
}

StatusOr<Program> LowerGlobalOrder(const Program& p, const StageCosts& costs) {
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(p, costs));
  const size_t sm = static_cast<size_t>(p.num_stages) * p.num_microbatches;
  // Position of the consumers: index of F and of I/B per (stage, mb).
  std::vector<int> f_pos(sm, -1), bwd_pos(sm, -1);
  for (int r = 0; r < p.pp_size; ++r)
    for (size_t i = 0; i < p.ranks[r].size(); ++i) {
      const Action& whole = p.ranks[r][i];
      for (int h = 0; h < (IsOverlap(whole.type) ? 2 : 1); ++h) {
        const Action a = h == 0 ? ForwardHalf(whole) : BackwardHalf(whole);
        if (!IsCompute(a.type)) continue;
        size_t k = static_cast<size_t>(a.stage) * p.num_microbatches + a.microbatch;
        if (a.type == ActionType::kF) f_pos[k] = static_cast<int>(i);
        if (IsInputBackward(a.type)) bwd_pos[k] = static_cast<int>(i);
      }
    }
  // Kahn's algorithm over: compute (r, i) -> (r, i+1); producer -> message;
  // message -> consumer. Priority (time, kind, rank, index, k): messages
  // (kind 0; k-th of the producer's, a pair has two) at their producer's end,
  // computes (kind 1) at their simulated start.
  using Node = std::tuple<double, int, int, int, int>;  // time, kind, rank, index (of producer for kind 0), k
  std::priority_queue<Node, std::vector<Node>, std::greater<Node>> ready;
  std::vector<std::vector<int>> waiting(p.pp_size);  // unmet message inputs per compute
  for (int r = 0; r < p.pp_size; ++r) waiting[r].assign(p.ranks[r].size(), 0);
  for (int r = 0; r < p.pp_size; ++r)
    for (const Action& a : p.ranks[r]) {
      Message msgs[2];
      const int n = ProducedMessages(p, a, msgs);
      for (int j = 0; j < n; ++j) {
        const Message& msg = msgs[j];
        size_t k = static_cast<size_t>(msg.consumer.stage) * p.num_microbatches + msg.consumer.microbatch;
        int pos = msg.consumer.type == ActionType::kF ? f_pos[k] : bwd_pos[k];
        waiting[p.stage_to_rank[msg.consumer.stage]][pos]++;
      }
    }
  std::vector<size_t> next(p.pp_size, 0);
  std::vector<bool> queued(p.pp_size, false);
  auto try_queue = [&](int r) {
    if (queued[r] || next[r] >= p.ranks[r].size() || waiting[r][next[r]] > 0) return;
    queued[r] = true;
    ready.emplace(sim.timing[r][next[r]].start, 1, r, static_cast<int>(next[r]), 0);
  };
  for (int r = 0; r < p.pp_size; ++r) try_queue(r);
  Program out = EmptyLike(p);
  size_t emitted = 0;
  while (!ready.empty()) {
    auto [time, kind, r, i, j] = ready.top();
    ready.pop();
    const Action& a = p.ranks[r][i];
    Message msgs[2];
    const int n = ProducedMessages(p, a, msgs);
    if (kind == 1) {
      out.ranks[r].push_back(a);
      ++emitted;
      queued[r] = false;
      ++next[r];
      for (int k = 0; k < n; ++k) ready.emplace(sim.timing[r][i].end, 0, r, i, k);
      try_queue(r);
    } else {
      const Message& msg = msgs[j];
      int q = p.stage_to_rank[msg.consumer.stage];
      out.ranks[r].push_back(msg.send);
      out.ranks[q].push_back(msg.recv);
      size_t k = static_cast<size_t>(msg.consumer.stage) * p.num_microbatches + msg.consumer.microbatch;
      int pos = msg.consumer.type == ActionType::kF ? f_pos[k] : bwd_pos[k];
      waiting[q][pos]--;
      try_queue(q);
    }
  }
  if (emitted != p.NumActions())
    return Status::Internal("lowering emitted " + std::to_string(emitted) + " of " + std::to_string(p.NumActions()) +
                            " compute actions");
  return out;
}

}  // namespace

StatusOr<Program> AddReduceGrad(const Program& p) {
  if (p.dp_size <= 1) return p;
  std::vector<std::vector<int>> after(p.pp_size);  // per rank: stages to reduce after index i (-1: none)
  std::vector<int> last(p.num_stages, -1);
  for (int r = 0; r < p.pp_size; ++r)
    for (size_t i = 0; i < p.ranks[r].size(); ++i) {
      const Action& a = p.ranks[r][i];
      if (IsReduceGrad(a.type))
        return Status::InvalidArgument("rank " + std::to_string(r) + ", action " + std::to_string(i) + " '" +
                                       a.ToString() + "': the program already holds gradient reductions");
      if (a.type == ActionType::kB || a.type == ActionType::kW) last[a.stage] = static_cast<int>(i);
      if (IsOverlap(a.type)) last[a.b_stage] = static_cast<int>(i);
    }
  for (int s = 0; s < p.num_stages; ++s)
    if (last[s] < 0)
      return Status::InvalidArgument("stage " + std::to_string(s) + " has no backward pass to reduce after");
  Program out = p;
  for (int r = 0; r < p.pp_size; ++r) {
    const auto& list = p.ranks[r];
    std::vector<Action> merged;
    merged.reserve(list.size() + p.num_stages);
    std::vector<int> pending;  // stages whose last backward ran, waiting for the comm run to end
    for (size_t i = 0; i < list.size(); ++i) {
      if (!pending.empty() && !IsComm(list[i].type)) {
        for (int s : pending) merged.push_back(MakeAction(s, ActionType::kReduceGrad, -1));
        pending.clear();
      }
      merged.push_back(list[i]);
      if (IsCompute(list[i].type) && last[list[i].stage] == static_cast<int>(i)) pending.push_back(list[i].stage);
      if (IsOverlap(list[i].type) && last[list[i].b_stage] == static_cast<int>(i)) pending.push_back(list[i].b_stage);
    }
    for (int s : pending) merged.push_back(MakeAction(s, ActionType::kReduceGrad, -1));
    out.ranks[r] = std::move(merged);
  }
  return out;
}

StatusOr<Program> AddSendRecv(const Program& p, const StageCosts& costs, LoweringStyle style) {
  if (p.HasComms())
    return Status::InvalidArgument("lowering needs a compute-only program, but it already holds SEND/RECV actions");
  PW_RETURN_IF_ERROR(ValidateComputeOrder(p));
  if (style == LoweringStyle::kJustInTime) return LowerJustInTime(p);
  return LowerGlobalOrder(p, costs);
}

}  // namespace pw
