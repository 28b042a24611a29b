// pipewright: plan, run, show and report pipeline-parallel training.
#include <cstdio>

#include "launch/commands.h"

namespace pw::cli {

void Fail(CommandContext& ctx, const std::string& command, const Status& status) {
  std::fprintf(stderr, "pipewright %s: %s\n", command.c_str(), status.ToString().c_str());
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound: ctx.exit_code = 2; break;
    case StatusCode::kInfeasible: ctx.exit_code = 3; break;
    default: ctx.exit_code = 1; break;
  }
}

}  // namespace pw::cli

int main(int argc, char** argv) {
  CLI::App app{"pipewright: a planner and executor for pipeline-parallel training"};
  app.require_subcommand(1);
  pw::cli::CommandContext ctx;
  pw::cli::RegisterScheduleCommand(app, ctx);
  pw::cli::RegisterValidateCommand(app, ctx);
  // PW_EXTRA_COMMANDS: further Register* calls are added here by their issues.
  pw::cli::RegisterPlanCommand(app, ctx);
#ifdef PW_WITH_EXECUTOR
  pw::cli::RegisterRunCommand(app, ctx);
  pw::cli::RegisterGenerateCommand(app, ctx);
  pw::cli::RegisterProfileCommand(app, ctx);
#endif
  pw::cli::RegisterShowCommand(app, ctx);
  pw::cli::RegisterReportCommand(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and succeeds; any bad command line (unknown flag, a value
    // that does not parse or is not allowed) exits 2 like every other bad input.
    return app.exit(e) == 0 ? 0 : 2;
  }
  return ctx.exit_code;
}
