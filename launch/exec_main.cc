// pipewright-exec: the executor commands of pipewright (run, generate,
// profile; LibTorch + MPI). Users run `pipewright run ...`, which execs this
// binary with its arguments and environment unchanged (launch/commands.h).
#include "launch/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"pipewright-exec: the executor commands of pipewright (started by `pipewright run|generate|profile`)",
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
