// What both CLI binaries share (launch/commands.h): error reporting and the
// parse-and-run step of main().
#include "launch/commands.h"

#include <cstdio>

#include "base/printable.h"

namespace pw::cli {

void Fail(CommandContext& ctx, const std::string& command, const Status& status) {
  // Messages quote file content: a binary file given by mistake must not
  // write raw bytes or escape sequences to the terminal.
  std::fprintf(stderr, "pipewright %s: %s\n", command.c_str(), EscapeForTerminal(status.ToString(), 1 << 20).c_str());
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      ctx.exit_code = 2;
      break;
    case StatusCode::kInfeasible:
      ctx.exit_code = 3;
      break;
    default:
      ctx.exit_code = 1;
      break;
  }
}

int ParseAndRun(CLI::App& app, CommandContext& ctx, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and succeeds; any bad command line (unknown flag, a value
    // that does not parse or is not allowed) exits 2 like every other bad input.
    return app.exit(e) == 0 ? 0 : 2;
  }
  return ctx.exit_code;
}

}  // namespace pw::cli
