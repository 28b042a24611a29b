// pipewright-exec: the executor commands of pipewright (kExecutorCommands in
// launch/commands.h: run, generate, profile, export, tokenize; LibTorch +
// MPI). Users run `pipewright run ...`, which execs this binary with its
// arguments and environment unchanged.
#include "launch/commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "pipewright-exec: the executor commands of pipewright (started by `pipewright "
      "run|generate|profile|export|tokenize`)",
      "pipewright"};
  app.require_subcommand(1);
  pw::cli::CommandContext ctx;
  pw::cli::RegisterRunCommand(app, ctx);
  pw::cli::RegisterGenerateCommand(app, ctx);
  pw::cli::RegisterProfileCommand(app, ctx);
  pw::cli::RegisterExportCommand(app, ctx);
  pw::cli::RegisterTokenizeCommand(app, ctx);
  return pw::cli::ParseAndRun(app, ctx, argc, argv);
}
