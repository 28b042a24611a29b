// Where this process sits in the job, read from the launcher's environment
// (docs/LAUNCH.md): Open MPI's mpirun (OMPI_COMM_WORLD_*), Slurm's srun
// (SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID), torchrun (RANK /
// WORLD_SIZE / LOCAL_RANK). Torch-free and MPI-free.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"

namespace pw::exec {

struct LaunchEnv {
  std::string launcher;  // "mpirun", "srun", "torchrun" or "none" (a plain process)
  int rank = 0;          // global rank in [0, world_size)
  int local_rank = 0;    // rank among the processes on this node (device index)
  int world_size = 1;
};

// Reads the environment through `getenv` (std::getenv by default; tests pass
// a fake). Precedence: Open MPI, then Slurm, then torchrun, else a single
// process. Errors (InvalidArgument) name the variable: a value that is not a
// non-negative integer, a rank outside [0, world size), or a launcher that
// sets its rank but not its world size.
StatusOr<LaunchEnv> ReadLaunchEnv(const std::function<const char*(const char*)>& getenv = nullptr);

// Checks the launcher's world size against the plan's pp_size. Error names
// both numbers and the flag to change ("mpirun -np 4" for a 4-rank plan).
Status CheckWorldSize(const LaunchEnv& env, int plan_pp_size);

// CUDA device index for a rank with `local_rank`: local_rank % device_count
// (0 if no device). Used by the engine (compute) and the NCCL communicator
// alike, so both land on the same GPU, also when the launcher exposes one GPU
// per task (srun --gpus-per-task=1: local rank 3 sees device 0). NCCL
// refuses two ranks on one GPU; it reports that case.
int DeviceForRank(int local_rank, int device_count);

}  // namespace pw::exec
