// Parsing JSON text from a user's file (configs, devices, layer costs,
// profiles, plans, traces, safetensors headers): every reader goes through
// here, so that no input can throw out of nlohmann-json, overflow the stack
// or print raw bytes in an error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace pw {

// Parses `text` (a whole document). `source` names the file in errors.
// Errors (InvalidArgument), never an exception:
//  - "<source>: not valid JSON (truncated or corrupt file?): <parser message>"
//    for a syntax error, or a number too large for a double (1e400); the
//    parser's message has non-printable bytes escaped (EscapeForTerminal);
//  - "<source>: JSON nested deeper than the limit of 64 levels"
//    (limits::kMaxJsonDepth): deeper documents would overflow the stack when
//    copied or hashed (nlohmann-json copies recursively). Deeper values are
//    dropped while parsing, so they never reach a recursive function.
StatusOr<nlohmann::json> ParseJsonText(const std::string& text, const std::string& source);

}  // namespace pw
