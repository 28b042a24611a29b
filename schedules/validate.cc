#include "schedules/validate.h"

#include <algorithm>
#include <deque>

#include "schedules/simulate.h"

namespace pw {

namespace {

std::string Where(const Program& p, int r, size_t i) {
  return "rank " + std::to_string(r) + ", action " + std::to_string(i) + " '" + p.ranks[r][i].ToString() + "'";
}

}  // namespace

Status ValidateComputeOrder(const Program& p) {
  PW_RETURN_IF_ERROR(CheckProgramShape(p));
  const size_t sm = static_cast<size_t>(p.num_stages) * p.num_microbatches;
  // Per (stage, mb): counts and the position of each pass, for the grid.
  std::vector<int> nf(sm, 0), nb(sm, 0), ni(sm, 0), nw(sm, 0);
  for (int r = 0; r < p.pp_size; ++r) {
    for (size_t i = 0; i < p.ranks[r].size(); ++i) {
      const Action& whole = p.ranks[r][i];
      if (!IsCompute(whole.type)) continue;
      // An OVERLAP_F_B counts as its F half, then its B half.
      const int halves = IsOverlap(whole.type) ? 2 : 1;
      for (int h = 0; h < halves; ++h) {
        const Action a = h == 0 ? ForwardHalf(whole) : BackwardHalf(whole);
        const std::string half = halves == 1 ? "" : h == 0 ? "its F half: " : "its B half: ";
        size_t k = static_cast<size_t>(a.stage) * p.num_microbatches + a.microbatch;
        auto fail = [&](const std::string& why) {
          return Status::InvalidArgument(Where(p, r, i) + ": " + half + why + "\n" + FormatGrid(p, {{r, int(i)}}));
        };
        switch (a.type) {
          case ActionType::kF:
            if (nf[k]++) return fail("a second forward of this stage and microbatch");
            break;
          case ActionType::kB:
            if (!nf[k]) return fail("backward before its forward");
            if (nb[k] || ni[k]) return fail("a second backward of this stage and microbatch");
            nb[k]++;
            break;
          case ActionType::kI:
            if (!nf[k]) return fail("input-gradient pass before its forward");
            if (nb[k] || ni[k]) return fail("a second backward of this stage and microbatch");
            ni[k]++;
            break;
          case ActionType::kW:
            if (!ni[k]) return fail("weight-gradient pass before its input-gradient pass (I)");
            if (nw[k]++) return fail("a second weight-gradient pass of this stage and microbatch");
            break;
          default:
            break;
        }
      }
    }
  }
  for (int s = 0; s < p.num_stages; ++s) {
    for (int mb = 0; mb < p.num_microbatches; ++mb) {
      size_t k = static_cast<size_t>(s) * p.num_microbatches + mb;
      std::string what;
      if (!nf[k])
        what = "no forward (F)";
      else if (!nb[k] && !ni[k])
        what = "no backward (B, or I and W)";
      else if (ni[k] && !nw[k])
        what = "an I but no W";
      if (!what.empty())
        return Status::InvalidArgument("stage " + std::to_string(s) + " microbatch " + std::to_string(mb) + " (rank " +
                                       std::to_string(p.stage_to_rank[s]) + ") has " + what + "\n" +
                                       FormatGrid(p, {{p.stage_to_rank[s], int(p.ranks[p.stage_to_rank[s]].size())}}));
    }
  }
  return Status::Ok();
}

Status ValidateReduceGrad(const Program& p, bool require_all) {
  PW_RETURN_IF_ERROR(CheckProgramShape(p));
  // Per stage: (rank, index) of its REDUCE_GRAD and of its last backward pass.
  std::vector<int> reduce_at(p.num_stages, -1), last_bwd(p.num_stages, -1);
  for (int r = 0; r < p.pp_size; ++r)
    for (size_t i = 0; i < p.ranks[r].size(); ++i) {
      const Action& a = p.ranks[r][i];
      const int at = static_cast<int>(i);
      auto fail = [&](const std::string& why) {
        return Status::InvalidArgument(Where(p, r, i) + ": " + why + "\n" + FormatGrid(p, {{r, at}}));
      };
      if (IsReduceGrad(a.type)) {
        if (p.dp_size == 1)
          return fail("a gradient reduction in a program with dp_size 1 (no data-parallel replicas to reduce over)");
        if (reduce_at[a.stage] >= 0)
          return fail("a second REDUCE_GRAD of stage " + std::to_string(a.stage) + " (the first is action " +
                      std::to_string(reduce_at[a.stage]) + ")");
        reduce_at[a.stage] = at;
      } else if (a.type == ActionType::kB || a.type == ActionType::kI || a.type == ActionType::kW ||
                 IsOverlap(a.type)) {
        const int stage = IsOverlap(a.type) ? a.b_stage : a.stage;  // the pair's backward is its B half
        if (reduce_at[stage] >= 0)
          return Status::InvalidArgument(
              Where(p, r, static_cast<size_t>(reduce_at[stage])) + ": the gradient reduction of stage " +
              std::to_string(stage) + " comes before its backward '" + a.ToString() + "' (action " + std::to_string(i) +
              "); it must follow the stage's last B/W\n" + FormatGrid(p, {{r, reduce_at[stage]}, {r, at}}));
        last_bwd[stage] = at;
      }
    }
  if (p.dp_size > 1 && require_all)
    for (int s = 0; s < p.num_stages; ++s)
      if (reduce_at[s] < 0) {
        const int r = p.stage_to_rank[s];
        return Status::InvalidArgument("stage " + std::to_string(s) + " (rank " + std::to_string(r) +
                                       ") has no REDUCE_GRAD but dp_size is " + std::to_string(p.dp_size) +
                                       ": each stage reduces its gradients over its data-parallel group once per "
                                       "step, after its last B/W (action " +
                                       std::to_string(last_bwd[s]) + ")\n" + FormatGrid(p, {{r, last_bwd[s]}}));
      }
  return Status::Ok();
}

Status CheckRendezvous(const Program& p) {
  PW_RETURN_IF_ERROR(CheckProgramShape(p));
  // Channel (dense id per src rank, dst rank, direction) of each comm action
  // and its FIFO index on that channel.
  const size_t P = static_cast<size_t>(p.pp_size);
  std::vector<int> channel_of(P * P * 2, -1);
  std::vector<std::vector<std::pair<int, int>>> slot(p.pp_size);  // per action: (channel, k) or (-1,-1)
  std::vector<int> sent, received;
  for (int r = 0; r < p.pp_size; ++r) {
    slot[r].assign(p.ranks[r].size(), {-1, -1});
    for (size_t i = 0; i < p.ranks[r].size(); ++i) {
      const Action& a = p.ranks[r][i];
      if (!IsComm(a.type)) continue;
      bool fwd = a.type == ActionType::kSendF || a.type == ActionType::kRecvF;
      int peer_stage = (a.type == ActionType::kSendF || a.type == ActionType::kRecvB) ? a.stage + 1 : a.stage - 1;
      if (peer_stage < 0 || peer_stage >= p.num_stages)
        return Status::InvalidArgument(Where(p, r, i) + ": no peer stage\n" + FormatGrid(p, {{r, int(i)}}));
      size_t peer = static_cast<size_t>(p.stage_to_rank[peer_stage]);
      size_t key = IsSend(a.type) ? (r * P + peer) * 2 + fwd : (peer * P + r) * 2 + fwd;
      int& c = channel_of[key];
      if (c < 0) {
        c = static_cast<int>(sent.size());
        sent.push_back(0);
        received.push_back(0);
      }
      slot[r][i] = {c, IsSend(a.type) ? sent[c]++ : received[c]++};
    }
  }
  // A rank is parked at its current comm action until the peer parks at the
  // matching one (same channel, same k, opposite side); then both move on.
  std::vector<size_t> pos(p.pp_size, 0);
  std::vector<bool> parked(p.pp_size, false);
  auto peer_of = [&](int r) {
    const Action& a = p.ranks[r][pos[r]];
    int peer_stage = (a.type == ActionType::kSendF || a.type == ActionType::kRecvB) ? a.stage + 1 : a.stage - 1;
    return p.stage_to_rank[peer_stage];
  };
  std::deque<int> work;
  for (int r = 0; r < p.pp_size; ++r) work.push_back(r);
  while (!work.empty()) {
    int r = work.front();
    work.pop_front();
    parked[r] = false;
    while (pos[r] < p.ranks[r].size()) {
      const Action& a = p.ranks[r][pos[r]];
      if (!IsComm(a.type)) {
        ++pos[r];
        continue;
      }
      int q = peer_of(r);
      bool match = parked[q] && slot[q][pos[q]] == slot[r][pos[r]] && IsSend(p.ranks[q][pos[q]].type) != IsSend(a.type);
      if (!match) {
        parked[r] = true;
        break;
      }
      parked[q] = false;
      ++pos[q];
      ++pos[r];
      work.push_back(q);
    }
  }
  std::vector<GridMark> marks;
  std::string why;
  for (int r = 0; r < p.pp_size; ++r) {
    if (pos[r] < p.ranks[r].size()) {
      marks.push_back({r, static_cast<int>(pos[r])});
      why += "\n  rank " + std::to_string(r) + " blocks in '" + p.ranks[r][pos[r]].ToString() + "' (action " +
             std::to_string(pos[r]) + ") until its peer reaches the matching operation";
    }
  }
  if (!marks.empty())
    return Status::InvalidArgument(
        "deadlock under rendezvous semantics (every SEND/RECV blocks until its peer arrives, as unbuffered NCCL "
        "operations on one stream):" +
        why + "\n" + FormatGrid(p, marks));
  return Status::Ok();
}

Status CheckPairOrder(const Program& p) {
  PW_RETURN_IF_ERROR(CheckProgramShape(p));
  const size_t P = static_cast<size_t>(p.pp_size);
  // Per ordered pair (src, dst): the sends in src's list order, and dst's
  // receives from src in its list order, as (rank, index).
  std::vector<std::vector<std::pair<int, int>>> sends(P * P), recvs(P * P);
  for (int r = 0; r < p.pp_size; ++r)
    for (size_t i = 0; i < p.ranks[r].size(); ++i) {
      const Action& a = p.ranks[r][i];
      if (!IsComm(a.type)) continue;
      const int peer_stage = (a.type == ActionType::kSendF || a.type == ActionType::kRecvB) ? a.stage + 1 : a.stage - 1;
      if (peer_stage < 0 || peer_stage >= p.num_stages)
        return Status::InvalidArgument(Where(p, r, i) + ": no peer stage\n" + FormatGrid(p, {{r, int(i)}}));
      const size_t peer = static_cast<size_t>(p.stage_to_rank[peer_stage]);
      if (IsSend(a.type))
        sends[r * P + peer].push_back({r, static_cast<int>(i)});
      else
        recvs[peer * P + r].push_back({r, static_cast<int>(i)});
    }
  // SEND_F s m pairs with RECV_F s+1 m; SEND_B s m with RECV_B s-1 m.
  auto pairs = [](const Action& send, const Action& recv) {
    if (send.microbatch != recv.microbatch) return false;
    if (send.type == ActionType::kSendF) return recv.type == ActionType::kRecvF && recv.stage == send.stage + 1;
    return recv.type == ActionType::kRecvB && recv.stage == send.stage - 1;
  };
  for (size_t pair = 0; pair < P * P; ++pair) {
    const size_t n = std::min(sends[pair].size(), recvs[pair].size());
    for (size_t k = 0; k < n; ++k) {
      const auto [sr, si] = sends[pair][k];
      const auto [rr, ri] = recvs[pair][k];
      const Action& send = p.ranks[sr][si];
      const Action& recv = p.ranks[rr][ri];
      if (pairs(send, recv)) continue;
      return Status::InvalidArgument(
          "message " + std::to_string(k) + " from rank " + std::to_string(sr) + " to rank " + std::to_string(rr) +
          " is '" + send.ToString() + "' (rank " + std::to_string(sr) + ", action " + std::to_string(si) +
          ") but rank " + std::to_string(rr) + "'s " + std::to_string(k) + "-th receive from it is '" +
          recv.ToString() + "' (action " + std::to_string(ri) +
          "): a communicator with one FIFO per rank pair (NCCL) would hand it the wrong tensor\n" +
          FormatGrid(p, {{sr, si}, {rr, ri}}));
    }
  }
  return Status::Ok();
}

Status ValidateProgram(const Program& p, const ValidateOptions& options) {
  PW_RETURN_IF_ERROR(ValidateComputeOrder(p));
  PW_RETURN_IF_ERROR(ValidateReduceGrad(p, options.require_reduce_grad));
  if (p.HasComms()) {
    // Exactly one SEND and one RECV for each cross-rank dependency.
    const size_t sm = static_cast<size_t>(p.num_stages) * p.num_microbatches;
    std::vector<int> count(sm * 4, 0);  // [k*4 + {SEND_F, RECV_F, SEND_B, RECV_B}]
    for (int r = 0; r < p.pp_size; ++r)
      for (const Action& a : p.ranks[r]) {
        if (!IsComm(a.type)) continue;
        size_t k = static_cast<size_t>(a.stage) * p.num_microbatches + a.microbatch;
        switch (a.type) {
          case ActionType::kSendF:
            count[k * 4 + 0]++;
            break;
          case ActionType::kRecvF:
            count[k * 4 + 1]++;
            break;
          case ActionType::kSendB:
            count[k * 4 + 2]++;
            break;
          case ActionType::kRecvB:
            count[k * 4 + 3]++;
            break;
          default:
            break;
        }
      }
    for (int s = 0; s < p.num_stages; ++s)
      for (int mb = 0; mb < p.num_microbatches; ++mb) {
        size_t k = static_cast<size_t>(s) * p.num_microbatches + mb;
        bool next_remote = s + 1 < p.num_stages && p.stage_to_rank[s + 1] != p.stage_to_rank[s];
        bool prev_remote = s > 0 && p.stage_to_rank[s - 1] != p.stage_to_rank[s];
        const int want[4] = {next_remote, prev_remote, prev_remote, next_remote};
        const char* names[4] = {"SEND_F", "RECV_F", "SEND_B", "RECV_B"};
        for (int t = 0; t < 4; ++t)
          if (count[k * 4 + t] != want[t])
            return Status::InvalidArgument("stage " + std::to_string(s) + " microbatch " + std::to_string(mb) +
                                           " (rank " + std::to_string(p.stage_to_rank[s]) + ") has " +
                                           std::to_string(count[k * 4 + t]) + " " + names[t] + " action(s), expected " +
                                           std::to_string(want[t]) +
                                           (want[t] ? "" : " (the peer stage is on the same rank or does not exist)"));
      }
  }
  auto sim = Simulate(p, UniformCosts(p.num_stages));
  if (!sim.ok()) return sim.status();
  for (int r = 0; r < p.pp_size; ++r) {
    const RankResult& rr = sim->per_rank[r];
    if (rr.end_memory_bytes != rr.start_memory_bytes)
      return Status::Internal("rank " + std::to_string(r) + "'s memory walk ends at " +
                              std::to_string(rr.end_memory_bytes) + " but began at " +
                              std::to_string(rr.start_memory_bytes));
  }
  if (options.rendezvous && p.HasComms()) PW_RETURN_IF_ERROR(CheckRendezvous(p));
  return Status::Ok();
}

}  // namespace pw
