// Subcommands of the `pipewright` CLI (CLI11). Each lives in its own file
// cmd_<name>.cc, exposes one Register function, and reports failure through
// the shared context; only main() exits the process.
//
// Two binaries share this header (launch/CMakeLists.txt):
//   pipewright       schedule, validate, plan, show, report, k8s in-process;
//                    links neither LibTorch nor MPI, so these start in
//                    milliseconds. The executor commands (kExecutorCommands
//                    below) are dispatched (ExecExecutor) to pipewright-exec.
//   pipewright-exec  the executor commands (LibTorch + MPI; executor builds
//                    only), installed beside pipewright.
#pragma once

#include <CLI/CLI.hpp>
#include <utility>

#include "base/status.h"

namespace pw::cli {

struct CommandContext {
  int exit_code = 0;
};

// Prints "pipewright <command>: <status>" to stderr and sets the exit code:
// 2 for invalid arguments / not found, 3 for infeasible, 1 otherwise.
void Fail(CommandContext& ctx, const std::string& command, const Status& status);

// Parses the command line into `app` (whose subcommands' callbacks run the
// command) and returns the process exit status: ctx.exit_code after a
// command, 0 after --help, 2 for any bad command line (unknown flag, a value
// that does not parse or is not allowed) like every other bad input.
int ParseAndRun(CLI::App& app, CommandContext& ctx, int argc, char** argv);

void RegisterScheduleCommand(CLI::App& app, CommandContext& ctx);      // cmd_schedule.cc
void RegisterValidateCommand(CLI::App& app, CommandContext& ctx);      // cmd_validate.cc
void RegisterPlanCommand(CLI::App& app, CommandContext& ctx);          // cmd_plan.cc
void RegisterShowCommand(CLI::App& app, CommandContext& ctx);          // cmd_show.cc
void RegisterReportCommand(CLI::App& app, CommandContext& ctx);        // cmd_report.cc
void RegisterK8sCommand(CLI::App& app, CommandContext& ctx);           // cmd_k8s.cc
void RegisterLaunchConfigCommand(CLI::App& app, CommandContext& ctx);  // cmd_launch_config.cc
void RegisterElasticCommand(CLI::App& app, CommandContext& ctx);       // cmd_elastic.cc
void RegisterRunCommand(CLI::App& app, CommandContext& ctx);           // cmd_run.cc (pipewright-exec)
void RegisterGenerateCommand(CLI::App& app, CommandContext& ctx);      // cmd_generate.cc (pipewright-exec)
void RegisterProfileCommand(CLI::App& app, CommandContext& ctx);       // cmd_profile.cc (pipewright-exec)
void RegisterExportCommand(CLI::App& app, CommandContext& ctx);        // cmd_export.cc (pipewright-exec)
void RegisterTokenizeCommand(CLI::App& app, CommandContext& ctx);      // cmd_tokenize.cc (pipewright-exec)

// One-line descriptions of the executor commands: `pipewright --help` lists
// them (without linking their code) and pipewright-exec registers them.
inline constexpr char kRunDescription[] = "train by replaying a plan (launch with mpirun -np <pp_size x dp_size>)";
inline constexpr char kGenerateDescription[] =
    "generate text from a checkpoint (`pipewright run --save` or --checkpoint-dir) or a Hugging Face directory: "
    "greedy, or sampling with temperature, top-k and top-p";
inline constexpr char kTokenizeDescription[] =
    "tokenize a text or JSON Lines file (SentencePiece .model or HF tokenizer.json) into an llm.c token file for "
    "`run --data`";
inline constexpr char kExportDescription[] =
    "write a checkpoint (`pipewright run --save` or --checkpoint-dir) as a Hugging Face directory (config.json + "
    "safetensors)";
inline constexpr char kProfileDescription[] =
    "measure layer F/I/W/B times and bytes (and P2P under mpirun -np 2); fit and write a profile";

// The subcommands pipewright-exec runs, each with its description: the one
// list that IsExecutorCommand, RegisterExecutorDispatch and `pipewright
// --help` read.
inline constexpr std::pair<const char*, const char*> kExecutorCommands[] = {{"run", kRunDescription},
                                                                            {"generate", kGenerateDescription},
                                                                            {"profile", kProfileDescription},
                                                                            {"export", kExportDescription},
                                                                            {"tokenize", kTokenizeDescription}};

// True for the subcommands pipewright-exec runs (kExecutorCommands).
bool IsExecutorCommand(const std::string& name);

// Path of the executor binary: $PW_EXEC_BINARY if set and non-empty, else
// "pipewright-exec" in the directory of the running executable
// (/proc/self/exe; `argv0`'s directory if /proc is unavailable).
std::string ExecutorBinaryPath(const char* argv0);

// Replaces this process by the executor binary (execv: same PID, the same
// argv including argv[0], the same environment), so `mpirun -np 4 pipewright
// run ...` starts each rank's executor in place. Returns only on failure,
// after printing "pipewright <command>: ..." to stderr: 2 when the binary
// does not exist (naming the path: a PW_PLANNER_ONLY build has no executor),
// 1 when it exists but cannot be executed (the system error).
int ExecExecutor(const std::string& command, char** argv);

// Adds kExecutorCommands to `app` as entries of `--help` whose callbacks call
// ExecExecutor with `argv` (main() normally dispatches before parsing; this
// keeps the two consistent). Stores the result in ctx.
void RegisterExecutorDispatch(CLI::App& app, CommandContext& ctx, char** argv);

}  // namespace pw::cli
