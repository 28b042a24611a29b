#include "executor/runtime/interpreter.h"

#include <chrono>
#include <map>
#include <tuple>

#include "executor/runtime/watchdog.h"

namespace pw::exec {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

Status StageBackend::ReduceGradients(int stage) {
  return Status::InvalidArgument(std::to_string(stage) +
                                 "REDUCE_GRAD: this backend runs one pipeline replica (dp_size 1) and has no "
                                 "data-parallel group to reduce gradients over");
}

StatusOr<RankStepTiming> RunRankStep(const Program& program, int step, Communicator& comm, StageBackend& backend,
                                     const StepHooks* hooks) {
  const bool record = hooks != nullptr && hooks->record_spans;
  WaitBoard* board = hooks != nullptr ? hooks->board : nullptr;
  const int rank = comm.rank();
  if (rank < 0 || rank >= static_cast<int>(program.ranks.size()))
    return Status::InvalidArgument("rank " + std::to_string(rank) +
                                   " has no action list (plan pp_size=" + std::to_string(program.pp_size) + ")");
  const std::vector<Action>& actions = program.ranks[rank];
  const auto& s2r = program.stage_to_rank;
  const int last_stage = program.num_stages - 1;
  RankStepTiming timing;
  const Clock::time_point t0 = Clock::now();
  if (record) timing.spans.resize(actions.size());
  auto mark = [&](size_t index, Clock::time_point a, Clock::time_point b) {
    if (!record) return;
    timing.spans[index] = ActionSpan{static_cast<int>(index), Seconds(t0, a), Seconds(t0, b)};
  };
  // "rank 1, step 3, action 7 '1F3' waiting for 1RECV_F3 (microbatch 3) from rank 0"
  auto waiting_text = [&](size_t index, const Action& awaited, int peer) {
    return "rank " + std::to_string(rank) + ", step " + std::to_string(step) + ", action " + std::to_string(index) +
           " '" + actions[index].ToString() + "' waiting for " + awaited.ToString() + " (microbatch " +
           std::to_string(awaited.microbatch) + ") from rank " + std::to_string(peer);
  };

  // Posted receives by (type, stage, mb), and the posted sends whose
  // completion was not observed yet (post order), tested after each compute
  // and waited late.
  struct PostedRecv {
    RequestId id;
    size_t index;  // of the RECV action
    Clock::time_point posted;
  };
  std::map<std::tuple<int, int, int>, PostedRecv> recvs;
  struct PostedSend {
    RequestId id;
    int index;  // of the SEND action
    Clock::time_point posted;
  };
  std::vector<PostedSend> sends;
  const auto send_peer = [&](const PostedSend& p) {
    const Action& sent = actions[p.index];
    return s2r[sent.type == ActionType::kSendF ? sent.stage + 1 : sent.stage - 1];
  };

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
  auto wait_input = [&](size_t index, ActionType recv_type, int producer_stage,
                        const Action& a) -> Status {  // a: the compute (or the pair's half) it feeds
    if (producer_stage < 0 || producer_stage > last_stage || s2r[producer_stage] == rank) return Status::Ok();
    auto it = recvs.find({static_cast<int>(recv_type), a.stage, a.microbatch});
    if (it == recvs.end())
      return Status::Internal("computing " + a.ToString() + " before receiving its input (no " +
                              MakeAction(a.stage, recv_type, a.microbatch).ToString() + " earlier in the list)");
    const Action awaited = actions[it->second.index];
    const int peer = s2r[producer_stage];
    if (board) board->Set(waiting_text(index, awaited, peer));
    const Clock::time_point w0 = Clock::now();
    Status st = comm.Wait(it->second.id);
    const Clock::time_point w1 = Clock::now();
    if (board)
      board->Set("rank " + std::to_string(rank) + ", step " + std::to_string(step) + " computing " + a.ToString());
    timing.wait_s += Seconds(w0, w1);
    mark(it->second.index, it->second.posted, w1);
    recvs.erase(it);
    if (!st.ok())
      return Status(st.code(), "waiting for " + awaited.ToString() + " (microbatch " +
                                   std::to_string(awaited.microbatch) + ") from rank " + std::to_string(peer) + ": " +
                                   st.message());
    return st;
  };
  // A send whose completion was observed (Test or Wait) at `t`.
  auto send_done = [&](const PostedSend& p, Clock::time_point t) {
    mark(static_cast<size_t>(p.index), p.posted, t);
    const Action& sent = actions[p.index];
    backend.SendCompleted(sent.type, sent.stage, sent.microbatch);
  };
  auto send_error = [&](const PostedSend& p, const Status& st) {
    return fail(static_cast<size_t>(p.index),
                Status(st.code(), "waiting for rank " + std::to_string(send_peer(p)) + " to receive microbatch " +
                                      std::to_string(actions[p.index].microbatch) + ": " + st.message()));
  };
  // Tests every send still in flight (never blocks); keeps the others in post
  // order. O(sends in flight).
  auto poll_sends = [&]() -> Status {
    size_t kept = 0;
    for (size_t k = 0; k < sends.size(); ++k) {
      StatusOr<bool> done = comm.Test(sends[k].id);
      if (!done.ok()) return send_error(sends[k], done.status());
      if (*done)
        send_done(sends[k], Clock::now());
      else
        sends[kept++] = sends[k];
    }
    sends.resize(kept);
    return Status::Ok();
  };

  for (size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    Status st;
    if (hooks != nullptr && hooks->before_action) hooks->before_action(static_cast<int>(i));
    // Each run of consecutive SEND/RECV is posted as one batch (an NCCL group).
    if (IsComm(a.type) && (i == 0 || !IsComm(actions[i - 1].type))) {
      st = comm.BeginBatch();
      if (!st.ok()) return fail(i, st);
    }
    switch (a.type) {
      case ActionType::kF:
      case ActionType::kB:
      case ActionType::kI:
      case ActionType::kW: {
        if (a.type == ActionType::kF) st = wait_input(i, ActionType::kRecvF, a.stage - 1, a);
        if (a.type == ActionType::kB || a.type == ActionType::kI)
          st = wait_input(i, ActionType::kRecvB, a.stage + 1, a);
        if (!st.ok()) return fail(i, st);
        const Clock::time_point c0 = Clock::now();
        if (hooks != nullptr && hooks->in_compute) hooks->in_compute();
        if (a.type == ActionType::kF) st = backend.Forward(a.stage, a.microbatch);
        if (a.type == ActionType::kB) st = backend.Backward(a.stage, a.microbatch, /*input_only=*/false);
        if (a.type == ActionType::kI) st = backend.Backward(a.stage, a.microbatch, /*input_only=*/true);
        if (a.type == ActionType::kW) st = backend.BackwardWeight(a.stage, a.microbatch);
        const Clock::time_point c1 = Clock::now();
        timing.busy_s += Seconds(c0, c1);
        mark(i, c0, c1);
        if (!st.ok()) break;
        // Outside any batch (batches are runs of SEND/RECV): every send in
        // flight has its request id (NCCL: its completion event) by now.
        PW_RETURN_IF_ERROR(poll_sends());
        st = backend.Progress();
        break;
      }
      case ActionType::kOverlapFB: {
        // The pair runs as its F half, then its B half (a backend may fuse
        // them later to overlap one half's compute with the other's
        // communication); its time is the pair's.
        const Action f = ForwardHalf(a), b = BackwardHalf(a);
        st = wait_input(i, ActionType::kRecvF, f.stage - 1, f);
        if (st.ok()) st = wait_input(i, ActionType::kRecvB, b.stage + 1, b);
        if (!st.ok()) return fail(i, st);
        const Clock::time_point c0 = Clock::now();
        if (hooks != nullptr && hooks->in_compute) hooks->in_compute();
        st = backend.Forward(f.stage, f.microbatch);
        if (st.ok()) st = backend.Backward(b.stage, b.microbatch, /*input_only=*/false);
        const Clock::time_point c1 = Clock::now();
        timing.busy_s += Seconds(c0, c1);
        mark(i, c0, c1);
        if (!st.ok()) break;
        PW_RETURN_IF_ERROR(poll_sends());
        st = backend.Progress();
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
        const Clock::time_point posted = Clock::now();
        StatusOr<RequestId> id = comm.Isend(s2r[peer_stage], ch, buf->data, buf->bytes);
        if (!id.ok()) return fail(i, id.status());
        sends.push_back(PostedSend{*id, static_cast<int>(i), posted});
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
        const Clock::time_point posted = Clock::now();
        StatusOr<RequestId> id = comm.Irecv(s2r[peer_stage], ch, buf->data, buf->bytes);
        if (!id.ok()) return fail(i, id.status());
        recvs[{static_cast<int>(a.type), a.stage, a.microbatch}] = PostedRecv{*id, i, posted};
        break;
      }
      case ActionType::kReduceGrad: {
        // Starts the stage's non-blocking collectives; the span is the time
        // to post them (flattening the gradients included).
        const Clock::time_point c0 = Clock::now();
        st = backend.ReduceGradients(a.stage);
        mark(i, c0, Clock::now());
        break;
      }
    }
    if (!st.ok()) return fail(i, st);
    if (IsComm(a.type) && (i + 1 == actions.size() || !IsComm(actions[i + 1].type))) {
      st = comm.EndBatch();
      if (!st.ok()) return fail(i, st);
    }
  }
  for (const PostedSend& p : sends) {
    const Action& sent = actions[p.index];
    if (board)
      board->Set("rank " + std::to_string(rank) + ", step " + std::to_string(step) + ", action " +
                 std::to_string(p.index) + " '" + sent.ToString() + "' waiting for rank " +
                 std::to_string(send_peer(p)) + " to receive it (microbatch " + std::to_string(sent.microbatch) + ")");
    Status st = comm.Wait(p.id);
    if (!st.ok()) return send_error(p, st);
    send_done(p, Clock::now());
  }
  sends.clear();
  if (board) board->Set("rank " + std::to_string(rank) + " after step " + std::to_string(step));
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
