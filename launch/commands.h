// Subcommands of the `pipewright` CLI (CLI11). Each lives in its own file
// cmd_<name>.cc, exposes one Register function, and reports failure through
// the shared context; only main() exits the process.
#pragma once

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace pw::cli {

struct CommandContext {
  int exit_code = 0;
};

// Prints "pipewright <command>: <status>" to stderr and sets the exit code:
// 2 for invalid arguments / not found, 3 for infeasible, 1 otherwise.
void Fail(CommandContext& ctx, const std::string& command, const Status& status);

void RegisterScheduleCommand(CLI::App& app, CommandContext& ctx);  // cmd_schedule.cc
void RegisterValidateCommand(CLI::App& app, CommandContext& ctx);  // cmd_validate.cc
void RegisterPlanCommand(CLI::App& app, CommandContext& ctx);      // cmd_plan.cc
void RegisterShowCommand(CLI::App& app, CommandContext& ctx);      // cmd_show.cc
void RegisterReportCommand(CLI::App& app, CommandContext& ctx);    // cmd_report.cc
void RegisterRunCommand(CLI::App& app, CommandContext& ctx);       // cmd_run.cc (executor builds only)
void RegisterGenerateCommand(CLI::App& app, CommandContext& ctx);  // cmd_generate.cc (executor builds only)
void RegisterProfileCommand(CLI::App& app, CommandContext& ctx);   // cmd_profile.cc (executor builds only)

}  // namespace pw::cli
