// What the mpirun test binaries (mpi_test.cc, mpi_dp_test.cc) share: one
// main() (mpi_test_main.cc) that starts MPI, opens the world communicator
// for the whole run, and runs GoogleTest on every rank, rank 0 alone printing
// progress (failures print on every rank).
#pragma once

#include "executor/comm/mpi_communicator.h"

namespace pw::exec::testing {

// The world communicator, set before any test runs.
extern MpiCommunicator* g_comm;

// Seconds a rank may wait on a peer before it fails instead of hanging
// (MpiCommunicator::SetWatchdog); 0 = never. Each test binary defines it.
extern const double kMpiTestWatchdogS;

}  // namespace pw::exec::testing
