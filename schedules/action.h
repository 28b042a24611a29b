// The Action IR: one step of one rank's instruction stream.
//
// An action is stage + type + microbatch and prints exactly as PyTorch's
// torch.distributed.pipelining `_Action.__repr__` does: "0F1", "2I0", "2W0",
// "1B3", "0SEND_F1", "1RECV_F1", "1SEND_B1", "0RECV_B1" (docs/PLAN_FORMAT.md,
// "Action strings"). Stage and microbatch are 0-based global indices.
// The data-parallel gradient reduction "1REDUCE_GRAD" (PyTorch's
// _ComputationType.REDUCE_GRAD) names a stage only: its microbatch is -1.
// The overlapped pair of DualPipe/DualPipeV (PyTorch's OVERLAP_F_B, an
// _Action with sub_actions) is one action: its F half is (stage, microbatch)
// and its full-backward half is (b_stage, b_microbatch); it prints as
// "(0F7;7B3)OVERLAP_F_B" (F half first, B half second).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace pw {

enum class ActionType : uint8_t {
  kF,      // forward of stage s on microbatch mb
  kB,      // full backward (input + weight gradient)
  kI,      // input-gradient backward only (zero-bubble "B")
  kW,      // weight-gradient backward only
  kSendF,  // stage s sends its forward output of mb to stage s+1
  kRecvF,  // stage s receives its forward input of mb from stage s-1
  kSendB,  // stage s sends the gradient of its input of mb to stage s-1
  kRecvB,  // stage s receives the gradient of its output of mb from stage s+1
  // Data-parallel gradient reduction of stage s (microbatch -1): the rank
  // starts the non-blocking all-reduce of the stage's gradients over its
  // data-parallel group here (right after the stage's last B/W) and waits
  // for all of them before the optimizer step. Only when dp_size > 1.
  kReduceGrad,
  // An overlapped pair (DualPipe "F&B"): the forward of (stage, microbatch)
  // and the full backward of (b_stage, b_microbatch), two different stages of
  // the same rank, run as one step whose halves may overlap (one half's
  // compute hides the other's communication). Its semantics are "F half, then
  // B half" (the executor runs them in that order); the simulator times the
  // pair as StageCost::overlap_fb of the F half's stage.
  kOverlapFB,
};

inline constexpr int kNumActionTypes = 10;

// "F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "REDUCE_GRAD",
// "OVERLAP_F_B".
const char* ActionTypeName(ActionType type);

// F, B, I, W and the overlapped pair OVERLAP_F_B.
inline bool IsCompute(ActionType t) {
  return t == ActionType::kF || t == ActionType::kB || t == ActionType::kI || t == ActionType::kW ||
         t == ActionType::kOverlapFB;
}
inline bool IsOverlap(ActionType t) { return t == ActionType::kOverlapFB; }
inline bool IsSend(ActionType t) { return t == ActionType::kSendF || t == ActionType::kSendB; }
inline bool IsRecv(ActionType t) { return t == ActionType::kRecvF || t == ActionType::kRecvB; }
// A point-to-point pipeline message (SEND/RECV). REDUCE_GRAD is neither this
// nor compute: it is a collective over the data-parallel group.
inline bool IsComm(ActionType t) { return IsSend(t) || IsRecv(t); }
inline bool IsReduceGrad(ActionType t) { return t == ActionType::kReduceGrad; }
// True for the backward passes that produce the input gradient (B and I).
inline bool IsInputBackward(ActionType t) { return t == ActionType::kB || t == ActionType::kI; }

struct Action {
  int32_t stage = 0;
  ActionType type = ActionType::kF;
  int32_t microbatch = 0;  // -1 for REDUCE_GRAD
  // The B half of an OVERLAP_F_B (stage and microbatch of its full
  // backward); -1 for every other type.
  int32_t b_stage = -1;
  int32_t b_microbatch = -1;

  // "<stage><TYPE><microbatch>", e.g. "2I0"; "<stage>REDUCE_GRAD" for a
  // reduction; "(<F half>;<B half>)OVERLAP_F_B" for a pair, e.g. "(0F7;7B3)OVERLAP_F_B".
  std::string ToString() const;
  friend bool operator==(const Action& a, const Action& b) {
    return a.stage == b.stage && a.type == b.type && a.microbatch == b.microbatch && a.b_stage == b.b_stage &&
           a.b_microbatch == b.b_microbatch;
  }
  friend bool operator!=(const Action& a, const Action& b) { return !(a == b); }
};

// `microbatch` is ignored (stored as -1) for kReduceGrad.
inline Action MakeAction(int stage, ActionType type, int microbatch) {
  Action a;
  a.stage = stage;
  a.type = type;
  a.microbatch = type == ActionType::kReduceGrad ? -1 : microbatch;
  return a;
}

// The overlapped pair of F(f_stage, f_mb) and B(b_stage, b_mb).
inline Action MakeOverlap(int f_stage, int f_mb, int b_stage, int b_mb) {
  Action a;
  a.stage = f_stage;
  a.type = ActionType::kOverlapFB;
  a.microbatch = f_mb;
  a.b_stage = b_stage;
  a.b_microbatch = b_mb;
  return a;
}

// The F half (kF) of an OVERLAP_F_B; `a` itself for any other type.
inline Action ForwardHalf(const Action& a) {
  return IsOverlap(a.type) ? MakeAction(a.stage, ActionType::kF, a.microbatch) : a;
}
// The B half (kB) of an OVERLAP_F_B; `a` itself for any other type.
inline Action BackwardHalf(const Action& a) {
  return IsOverlap(a.type) ? MakeAction(a.b_stage, ActionType::kB, a.b_microbatch) : a;
}

// Parses one whole action string (leading/trailing spaces and tabs are
// ignored). Returns InvalidArgument naming the token for anything that is not
// exactly `<digits><TYPE><digits>` with TYPE one of the eight above, or
// `<digits>REDUCE_GRAD` (no microbatch; parsed with microbatch -1), or
// `(<s>F<mb>;<s>B<mb>)OVERLAP_F_B` (exactly an F then a full B); note that
// PyTorch's regex is a prefix match and would accept "0BW0" or "0F": we do not.
StatusOr<Action> ParseAction(std::string_view text);

}  // namespace pw
