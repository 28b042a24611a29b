#include "executor/comm/launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace pw::exec {
namespace {

StatusOr<LaunchEnv> Read(const std::map<std::string, std::string>& vars) {
  return ReadLaunchEnv([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchEnv, EachLauncherMapsToRankLocalRankAndWorldSize) {
  struct Case {
    std::map<std::string, std::string> vars;
    std::string launcher;
    int rank, local, size;
  } cases[] = {
      {{{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
       "mpirun",
       5,
       1,
       8},
      {{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "3"}}, "srun", 3, 3, 4},
      {{{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}, "torchrun", 2, 0, 4},
      {{{"RANK", "1"}, {"WORLD_SIZE", "2"}}, "torchrun", 1, 1, 2},
      {{}, "none", 0, 0, 1},
      // mpirun inside a Slurm allocation: Open MPI's own variables win.
      {{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "9"}},
       "mpirun",
       0,
       0,
       2},
  };
  for (const auto& c : cases) {
    auto env = Read(c.vars);
    ASSERT_TRUE(env.ok()) << c.launcher << ": " << env.status().ToString();
    EXPECT_EQ(env->launcher, c.launcher);
    EXPECT_EQ(env->rank, c.rank) << c.launcher;
    EXPECT_EQ(env->local_rank, c.local) << c.launcher;
    EXPECT_EQ(env->world_size, c.size) << c.launcher;
  }
}

TEST(LaunchEnv, BadValuesNameTheVariable) {
  auto a = Read({{"RANK", "x"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("RANK='x'"), std::string::npos) << a.status().message();
  auto b = Read({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("SLURM_PROCID=4"), std::string::npos) << b.status().message();
  auto c = Read({{"RANK", "0"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("WORLD_SIZE"), std::string::npos) << c.status().message();
}

TEST(LaunchEnv, WorldSizeMismatchNamesTheLauncherFlag) {
  LaunchEnv env;
  env.launcher = "mpirun";
  env.world_size = 2;
  Status st = CheckWorldSize(env, 4);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("mpirun -np 4"), std::string::npos) << st.message();
  env.launcher = "srun";
  EXPECT_NE(CheckWorldSize(env, 4).message().find("srun -n 4"), std::string::npos);
  EXPECT_TRUE(CheckWorldSize(env, 2).ok());
  env.local_rank = 5;
  EXPECT_EQ(DeviceForRank(env.local_rank, 4), 1);
  EXPECT_EQ(DeviceForRank(env.local_rank, 1), 0);  // one GPU per task
  EXPECT_EQ(DeviceForRank(env.local_rank, 0), 0);
}

}  // namespace
}  // namespace pw::exec
