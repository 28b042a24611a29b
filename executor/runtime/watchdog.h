// Fault reporting for long runs: what a rank is blocked on, readable from a
// signal handler, so that a rank whose job is torn down (a peer died and the
// launcher terminates the others) still says what it was waiting for.
//
// The bounded wait itself lives in the communicators (MpiCommunicator's
// SetWatchdog: a receive, send or collective that makes no progress for that
// long returns CommError); the interpreter names the action and microbatch.
// Torch-free and MPI-free.
#pragma once

#include <atomic>
#include <string>

namespace pw::exec {

// A fixed-size text slot. Set() is called by the rank's own thread before
// each blocking wait; Text() may be read from a signal handler (no
// allocation, no locks: the text is always NUL-terminated, at worst a mix of
// two consecutive messages if a signal lands mid-copy).
class WaitBoard {
 public:
  static constexpr size_t kCapacity = 512;
  // Copies `text` (truncated to kCapacity - 1 bytes).
  void Set(const std::string& text);
  void Clear() { Set(""); }
  const char* Text() const { return text_; }

 private:
  char text_[kCapacity] = {0};
};

// For main-level code only (`pipewright run`): installs SIGTERM and SIGINT
// handlers that write "pipewright run: rank R terminated while <board text>"
// to stderr and end the process with exit status 128 + signal. Launchers
// (mpirun, srun, torchrun) send SIGTERM to the remaining ranks when one rank
// dies. `board` must live for the rest of the process. Idempotent.
void InstallTerminationReport(const WaitBoard* board, int rank);

}  // namespace pw::exec
