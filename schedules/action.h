// The Action IR: one step of one rank's instruction stream.
//
// An action is stage + type + microbatch and prints exactly as PyTorch's
// torch.distributed.pipelining `_Action.__repr__` does: "0F1", "2I0", "2W0",
// "1B3", "0SEND_F1", "1RECV_F1", "1SEND_B1", "0RECV_B1" (docs/PLAN_FORMAT.md,
// "Action strings"). Stage and microbatch are 0-based global indices.
// The data-parallel gradient reduction "1REDUCE_GRAD" (PyTorch's
// _ComputationType.REDUCE_GRAD) names a stage only: its microbatch is -1.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace pw {

enum class ActionType : uint8_t {
  kF,       // forward of stage s on microbatch mb
  kB,       // full backward (input + weight gradient)
  kI,       // input-gradient backward only (zero-bubble "B")
  kW,       // weight-gradient backward only
  kSendF,   // stage s sends its forward output of mb to stage s+1
  kRecvF,   // stage s receives its forward input of mb from stage s-1
  kSendB,   // stage s sends the gradient of its input of mb to stage s-1
  kRecvB,   // stage s receives the gradient of its output of mb from stage s+1
  // Data-parallel gradient reduction of stage s (microbatch -1): the rank
  // starts the non-blocking all-reduce of the stage's gradients over its
  // data-parallel group here (right after the stage's last B/W) and waits
  // for all of them before the optimizer step. Only when dp_size > 1.
  kReduceGrad,
};

inline constexpr int kNumActionTypes = 9;

// "F", "B", "I", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "REDUCE_GRAD".
const char* ActionTypeName(ActionType type);

inline bool IsCompute(ActionType t) {
  return t == ActionType::kF || t == ActionType::kB || t == ActionType::kI || t == ActionType::kW;
}
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

  // "<stage><TYPE><microbatch>", e.g. "2I0"; "<stage>REDUCE_GRAD" for a reduction.
  std::string ToString() const;
  friend bool operator==(const Action& a, const Action& b) {
    return a.stage == b.stage && a.type == b.type && a.microbatch == b.microbatch;
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

// Parses one whole action string (leading/trailing spaces and tabs are
// ignored). Returns InvalidArgument naming the token for anything that is not
// exactly `<digits><TYPE><digits>` with TYPE one of the eight above, or
// `<digits>REDUCE_GRAD` (no microbatch; parsed with microbatch -1); note that
// PyTorch's regex is a prefix match and would accept "0BW0" or "0F": we do not.
StatusOr<Action> ParseAction(std::string_view text);

}  // namespace pw
