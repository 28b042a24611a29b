#include "executor/comm/launch_env.h"

#include <cstdlib>

namespace pw::exec {

namespace {

// Parses a non-negative integer variable; `*present` says whether it is set.
Status ReadInt(const std::function<const char*(const char*)>& getenv, const char* name, int* out, bool* present) {
  const char* v = getenv(name);
  *present = v != nullptr && *v != '\0';
  if (!*present) return Status::Ok();
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > (1L << 30))
    return Status::InvalidArgument(std::string("environment variable ") + name + "='" + v +
                                   "' is not a non-negative integer");
  *out = static_cast<int>(x);
  return Status::Ok();
}

struct Scheme {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
};

constexpr Scheme kSchemes[] = {
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

}  // namespace

StatusOr<LaunchEnv> ReadLaunchEnv(const std::function<const char*(const char*)>& getenv_in) {
  std::function<const char*(const char*)> getenv = getenv_in;
  if (!getenv) getenv = [](const char* n) { return static_cast<const char*>(std::getenv(n)); };
  for (const Scheme& s : kSchemes) {
    LaunchEnv env;
    bool has_rank = false, has_size = false, has_local = false;
    PW_RETURN_IF_ERROR(ReadInt(getenv, s.rank, &env.rank, &has_rank));
    if (!has_rank) continue;
    PW_RETURN_IF_ERROR(ReadInt(getenv, s.size, &env.world_size, &has_size));
    if (!has_size) return Status::InvalidArgument(std::string(s.launcher) + " set " + s.rank + " but not " + s.size);
    PW_RETURN_IF_ERROR(ReadInt(getenv, s.local_rank, &env.local_rank, &has_local));
    if (!has_local) env.local_rank = env.rank;  // single node
    if (env.world_size < 1 || env.rank >= env.world_size)
      return Status::InvalidArgument(std::string(s.rank) + "=" + std::to_string(env.rank) + " is not in [0, " + s.size +
                                     "=" + std::to_string(env.world_size) + ")");
    env.launcher = s.launcher;
    return env;
  }
  LaunchEnv single;
  single.launcher = "none";
  return single;
}

Status CheckWorldSize(const LaunchEnv& env, int plan_pp_size) {
  if (env.world_size == plan_pp_size) return Status::Ok();
  std::string how = env.launcher == "srun"       ? "srun -n "
                    : env.launcher == "torchrun" ? "torchrun --nproc-per-node "
                                                 : "mpirun -np ";
  return Status::InvalidArgument(
      "the plan is for " + std::to_string(plan_pp_size) + " pipeline ranks (pp_size) but " + env.launcher +
      " started " + std::to_string(env.world_size) + " process" + (env.world_size == 1 ? "" : "es") + ": launch with " +
      how + std::to_string(plan_pp_size) + ", or make a plan with --pp " + std::to_string(env.world_size));
}

int DeviceForRank(int local_rank, int device_count) { return device_count > 0 ? local_rank % device_count : 0; }

}  // namespace pw::exec
