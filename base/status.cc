#include "base/status.h"

#include "base/printable.h"

namespace pw {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kInfeasible:
      return "infeasible";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kCommError:
      return "communication error";
    case StatusCode::kComputeError:
      return "compute error";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status::Status(StatusCode code, std::string message)
    : code_(code), message_(EscapeForTerminal(message, message.size())) {}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace pw
