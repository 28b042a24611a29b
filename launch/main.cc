// pipewright: plan, run, show and report pipeline-parallel training.
// This binary links neither LibTorch nor MPI: schedule, validate, plan, show,
// report and k8s run here; the executor commands (kExecutorCommands in
// launch/commands.h: run, generate, profile, export, tokenize) replace the
// process by pipewright-exec, before any parsing.
#include "launch/commands.h"

int main(int argc, char** argv) {
  if (argc >= 2 && pw::cli::IsExecutorCommand(argv[1])) return pw::cli::ExecExecutor(argv[1], argv);
  CLI::App app{"pipewright: a planner and executor for pipeline-parallel training"};
  app.require_subcommand(1);
  pw::cli::CommandContext ctx;
  pw::cli::RegisterScheduleCommand(app, ctx);
  pw::cli::RegisterValidateCommand(app, ctx);
  pw::cli::RegisterPlanCommand(app, ctx);
  pw::cli::RegisterExecutorDispatch(app, ctx, argv);  // kExecutorCommands
  pw::cli::RegisterShowCommand(app, ctx);
  pw::cli::RegisterReportCommand(app, ctx);
  pw::cli::RegisterK8sCommand(app, ctx);
  pw::cli::RegisterElasticCommand(app, ctx);
  return pw::cli::ParseAndRun(app, ctx, argc, argv);
}
