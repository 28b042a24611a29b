#include "executor/interpreter.h"

#include <chrono>
#include <map>
#include <tuple>

namespace pw::exec {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

StatusOr<RankStepTiming> RunRankStep(const Program& program, int step, Communicator& comm, StageBackend& backend) {
  const int rank = comm.rank();
  if (rank < 0 || rank >= static_cast<int>(program.ranks.size()))
    return Status::InvalidArgument("rank " + std::to_string(rank) + " has no action list (plan pp_size=" +
                                   std::to_string(program.pp_size) + ")");
  const std::vector<Action>& actions = program.ranks[rank];
  const auto& s2r = program.stage_to_rank;
  const int last_stage = program.num_stages - 1;
  RankStepTiming timing;
  const Clock::time_point t0 = Clock::now();

  // Posted receives by (type, stage, mb) and posted sends, waited late.
  std::map<std::tuple<int, int, int>, RequestId> recvs;
  std::vector<std::pair<RequestId, int>> sends;  // (request, action index)

  auto fail = [&](size_t index, const Status& st) {
    GridMark mark;
    mark.rank = rank;
    mark.index = static_cast<int>(index);
    return Status(st.code(), "rank " + std::to_string(rank) + ", step " + std::to_string(step) + ", action " +
                                 std::to_string(index) + " '" + actions[index].ToString() + "': " + st.message() +
                                 "\n" + FormatGrid(program, {mark}, 3));
  };
  // Waits for the receive that feeds compute `a` when its producer stage
  // lives on another rank; no-op for local inputs (data, loss, same rank).
  auto wait_input = [&](size_t index, ActionType recv_type, int producer_stage) -> Status {
    const Action& a = actions[index];
    if (producer_stage < 0 || producer_stage > last_stage || s2r[producer_stage] == rank) return Status::Ok();
    auto it = recvs.find({static_cast<int>(recv_type), a.stage, a.microbatch});
    if (it == recvs.end())
      return Status::Internal("computing " + a.ToString() + " before receiving its input (no " +
                              MakeAction(a.stage, recv_type, a.microbatch).ToString() + " earlier in the list)");
    const Clock::time_point w0 = Clock::now();
    Status st = comm.Wait(it->second);
    timing.wait_s += Seconds(w0, Clock::now());
    recvs.erase(it);
    return st;
  };

  for (size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    Status st;
    switch (a.type) {
      case ActionType::kF:
      case ActionType::kB:
      case ActionType::kI:
      case ActionType::kW: {
        if (a.type == ActionType::kF) st = wait_input(i, ActionType::kRecvF, a.stage - 1);
        if (a.type == ActionType::kB || a.type == ActionType::kI) st = wait_input(i, ActionType::kRecvB, a.stage + 1);
        if (!st.ok()) return fail(i, st);
        const Clock::time_point c0 = Clock::now();
        if (a.type == ActionType::kF) st = backend.Forward(a.stage, a.microbatch);
        if (a.type == ActionType::kB) st = backend.Backward(a.stage, a.microbatch, /*input_only=*/false);
        if (a.type == ActionType::kI) st = backend.Backward(a.stage, a.microbatch, /*input_only=*/true);
        if (a.type == ActionType::kW) st = backend.BackwardWeight(a.stage, a.microbatch);
        timing.busy_s += Seconds(c0, Clock::now());
        break;
      }
      case ActionType::kSendF:
      case ActionType::kSendB: {
        const int peer_stage = a.type == ActionType::kSendF ? a.stage + 1 : a.stage - 1;
        if (peer_stage < 0 || peer_stage > last_stage) {
          st = Status::InvalidArgument("no stage " + std::to_string(peer_stage) + " to send to");
          break;
        }
        StatusOr<MessageBuffer> buf = backend.SendBuffer(a.type, a.stage, a.microbatch);
        if (!buf.ok()) return fail(i, buf.status());
        const Channel ch = a.type == ActionType::kSendF ? Channel::kForward : Channel::kBackward;
        StatusOr<RequestId> id = comm.Isend(s2r[peer_stage], ch, buf->data, buf->bytes);
        if (!id.ok()) return fail(i, id.status());
        sends.emplace_back(*id, static_cast<int>(i));
        break;
      }
      case ActionType::kRecvF:
      case ActionType::kRecvB: {
        const int peer_stage = a.type == ActionType::kRecvF ? a.stage - 1 : a.stage + 1;
        if (peer_stage < 0 || peer_stage > last_stage) {
          st = Status::InvalidArgument("no stage " + std::to_string(peer_stage) + " to receive from");
          break;
        }
        StatusOr<MessageBuffer> buf = backend.RecvBuffer(a.type, a.stage, a.microbatch);
        if (!buf.ok()) return fail(i, buf.status());
        const Channel ch = a.type == ActionType::kRecvF ? Channel::kForward : Channel::kBackward;
        StatusOr<RequestId> id = comm.Irecv(s2r[peer_stage], ch, buf->data, buf->bytes);
        if (!id.ok()) return fail(i, id.status());
        recvs[{static_cast<int>(a.type), a.stage, a.microbatch}] = *id;
        break;
      }
    }
    if (!st.ok()) return fail(i, st);
  }
  for (const auto& [id, index] : sends) {
    Status st = comm.Wait(id);
    if (!st.ok()) return fail(static_cast<size_t>(index), st);
  }
  if (!recvs.empty()) {
    const auto& [type, stage, mb] = recvs.begin()->first;
    return Status::Internal("rank " + std::to_string(rank) + ", step " + std::to_string(step) + ": " +
                            MakeAction(stage, static_cast<ActionType>(type), mb).ToString() +
                            " was posted but no compute consumed it");
  }
  PW_RETURN_IF_ERROR(backend.EndStep());
  timing.end_s = Seconds(t0, Clock::now());
  return timing;
}

}  // namespace pw::exec
