// The executor commands (kExecutorCommands: run, generate, profile, export,
// tokenize): handed to pipewright-exec, the binary that links LibTorch and
// MPI, by execv (launch/commands.h).
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "launch/commands.h"

namespace pw::cli {

namespace {

constexpr char kExecutorName[] = "pipewright-exec";

// The directory part of `path` ("." when it has none).
std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

bool IsExecutorCommand(const std::string& name) {
  for (const auto& [command, description] : kExecutorCommands)
    if (name == command) return true;
  return false;
}

std::string ExecutorBinaryPath(const char* argv0) {
  if (const char* env = std::getenv("PW_EXEC_BINARY"); env && *env) return env;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir;
  if (n > 0) {
    self[n] = '\0';
    dir = DirName(self);
  } else {
    dir = DirName(argv0 ? argv0 : "");
  }
  return dir + "/" + kExecutorName;
}

int ExecExecutor(const std::string& command, char** argv) {
  const std::string path = ExecutorBinaryPath(argv[0]);
  const bool from_env = std::getenv("PW_EXEC_BINARY") && *std::getenv("PW_EXEC_BINARY");
  std::fflush(stdout);
  execv(path.c_str(), argv);
  const int err = errno;  // execv returns only on failure
  const std::string source = from_env ? " (from $PW_EXEC_BINARY)" : "";
  if (err == ENOENT || err == ENOTDIR) {
    std::fprintf(stderr,
                 "pipewright %s: the executor binary %s%s does not exist: this pipewright has no executor "
                 "(a build configured with -DPW_PLANNER_ONLY=ON builds none; otherwise build or install "
                 "pipewright-exec beside pipewright: cmake --build BUILD --target pipewright-exec), or set "
                 "PW_EXEC_BINARY to its path\n",
                 command.c_str(), path.c_str(), source.c_str());
    return 2;
  }
  std::fprintf(stderr, "pipewright %s: cannot execute the executor binary %s%s: %s\n", command.c_str(), path.c_str(),
               source.c_str(), std::strerror(err));
  return 1;
}

void RegisterExecutorDispatch(CLI::App& app, CommandContext& ctx, char** argv) {
  for (const auto& [name, description] : kExecutorCommands) {
    CLI::App* sub = app.add_subcommand(name, description);
    sub->prefix_command();  // every argument after the name belongs to pipewright-exec
    sub->set_help_flag();   // `pipewright run --help` is pipewright-exec's help
    const std::string command = name;
    sub->callback([command, argv, &ctx] { ctx.exit_code = ExecExecutor(command, argv); });
  }
}

}  // namespace pw::cli
