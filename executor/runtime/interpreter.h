// The interpreter: replays one rank's action list for one training step
// (docs/PLAN_FORMAT.md semantics), with a single switch over action types.
// Torch-free: compute goes to a StageBackend (LibTorch in torch_backend.cc, a
// fake in tests), messages to a Communicator.
//
//   RECV_*  posts a receive into a buffer the backend provides, stored under
//           (type, stage, microbatch); the consuming compute waits on it just
//           before it runs (F for RECV_F, I/B for RECV_B).
//   SEND_*  posts a send of the buffer the backend produced (post early).
//           After each compute action the sends still in flight are tested
//           (Communicator::Test, never blocking); one found complete is
//           reported to the backend (SendCompleted), which may free its
//           buffer at once instead of at the end of the step. The sends not
//           found complete by then are waited at the end of the step, in
//           post order (wait late). Tests neither post nor reorder anything,
//           so the FIFO / rendezvous order of posts is unchanged.
//   F/B/I/W run on the backend and are timed (busy seconds).
//   REDUCE_GRAD starts the stage's data-parallel gradient reduction
//           (StageBackend::ReduceGradients; never blocks, not busy time).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "executor/comm/communicator.h"
#include "schedules/action.h"
#include "schedules/program.h"

namespace pw::exec {

// A contiguous byte range owned by the backend.
struct MessageBuffer {
  void* data = nullptr;
  int64_t bytes = 0;
};

class StageBackend {
 public:
  virtual ~StageBackend() = default;
  // F(stage, mb). Its input is the data (stage 0), a completed receive
  // (RecvBuffer of RECV_F), or the output of F(stage-1, mb) on this rank.
  virtual Status Forward(int stage, int microbatch) = 0;
  // B (input_only = false) or I (input_only = true) of (stage, mb). The
  // output gradient is the loss (last stage), a completed RECV_B buffer, or
  // the input gradient of I/B(stage+1, mb) on this rank.
  virtual Status Backward(int stage, int microbatch, bool input_only) = 0;
  // W(stage, mb): the weight gradients deferred by I(stage, mb).
  virtual Status BackwardWeight(int stage, int microbatch) = 0;
  // The bytes to send for SEND_F (F's output) or SEND_B (the input gradient
  // of I/B). Must stay valid and unchanged until SendCompleted(type, stage,
  // microbatch).
  virtual StatusOr<MessageBuffer> SendBuffer(ActionType type, int stage, int microbatch) = 0;
  // The send of SEND_F / SEND_B (type) of (stage, microbatch) has completed:
  // its SendBuffer may be released now. Called exactly once per SEND action
  // of the step, after its post and before EndStep: after the first compute
  // action at which Communicator::Test reports it complete, or else when the
  // end-of-step wait returns. Default: nothing (keep it until EndStep).
  virtual void SendCompleted(ActionType type, int stage, int microbatch) {}
  // A fresh buffer of the exact expected size for RECV_F / RECV_B; the
  // backend reads it when the consumer runs. Valid until EndStep.
  virtual StatusOr<MessageBuffer> RecvBuffer(ActionType type, int stage, int microbatch) = 0;
  // REDUCE_GRAD(stage): the stage's gradients of this step are final; start
  // their non-blocking reduction over the data-parallel group (the engine
  // waits for it before the optimizer step). Default: InvalidArgument (a
  // backend of one replica, dp_size 1).
  virtual Status ReduceGradients(int stage);
  // Called after every compute action (F/B/I/W): lets a backend drive the
  // progress of its collectives in flight (Open MPI progresses a
  // non-blocking collective only inside MPI calls: without this, a reduction
  // started by REDUCE_GRAD advances only while the rank happens to wait on a
  // message). Must not block. Default: nothing.
  virtual Status Progress() { return Status::Ok(); }
  // After every send completed: drop per-step state (messages, activations).
  virtual Status EndStep() = 0;
};

// Measured interval of one action of the rank's list, in seconds from the
// start of RunRankStep. Compute: start/end of the computation. SEND: posted
// -> its completion observed: by the Test after a compute action (so the end
// is late by up to that compute's duration) or by the end-of-step wait.
// RECV: posted -> its wait returned (data there).
struct ActionSpan {
  int index = 0;  // position in the rank's action list
  double start_s = 0.0;
  double end_s = 0.0;
};

// What this rank is blocked on right now, readable from a signal handler
// (watchdog.h): a fixed buffer, overwritten before each wait.
class WaitBoard;

// Optional instrumentation of one step; every member may be left empty.
struct StepHooks {
  bool record_spans = false;   // fill RankStepTiming::spans (--trace)
  WaitBoard* board = nullptr;  // set to "rank r, step k, waiting on ..." before each wait
  // Called before action `index` runs (test-only fault injection).
  std::function<void(int index)> before_action;
  // Called at the start of each compute action (F/B/I/W, OVERLAP_F_B),
  // inside its timed span, so what it does counts as the action's compute
  // (test-only: the straggler drill's sleep, run --slow-rank).
  std::function<void()> in_compute;
};

struct RankStepTiming {
  double busy_s = 0.0;            // sum of compute action durations on this rank
  double end_s = 0.0;             // from the call's start to the last send's completion observed
  double wait_s = 0.0;            // time blocked in receive waits
  std::vector<ActionSpan> spans;  // one per action, list order (if hooks->record_spans)
};

// Runs `actions` (the rank's list from `program`) on `backend` and `comm`.
// `step` is only used in messages. REQUIRES: program passed ValidateProgram,
// and comm.rank() is the rank whose list is run.
// Errors carry "rank r, step k, action i '<action>': ..." and the schedule
// grid with the action marked: backend errors (ComputeError), comm errors
// (CommError), and a compute whose cross-rank input was never received
// (Internal: "computing 2F0 before receiving its input").
// A receive that times out (the communicator's watchdog) is reported as
// "waiting for <RECV action> (microbatch m) from rank p: ...".
StatusOr<RankStepTiming> RunRankStep(const Program& program, int step, Communicator& comm, StageBackend& backend,
                                     const StepHooks* hooks = nullptr);

}  // namespace pw::exec
