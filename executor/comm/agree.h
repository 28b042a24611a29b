// Cross-rank agreement on an error: the one way ranks refuse together, so
// that no rank waits at a collective or a message for a rank that stopped.
// Torch-free.
#pragma once

#include "base/status.h"
#include "executor/comm/communicator.h"

namespace pw::exec {

// Collective (every rank must call it, in the same order): every rank
// contributes `mine`; every rank returns the failure of the lowest rank that
// failed, with that failure's code kept (a bad-input error stays
// InvalidArgument, so the exit code is the same on every rank). A rank
// returns its own failure unchanged and another rank's as "rank r: <message>".
// OK only if every rank is OK. Errors: CommError if the gather itself fails.
Status AgreeOnStatus(const Status& mine, Communicator& comm);

}  // namespace pw::exec
