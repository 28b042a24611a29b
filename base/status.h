// Status and StatusOr: the one error type of pipewright (leveldb/abseil style).
//
// Library code never exits the process and never lets an exception cross a
// module boundary: it returns a Status naming the option, file, field, rank or
// action involved. Only `main` turns a Status into an exit code.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace pw {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad user input: option, file content, field value
  kInfeasible,       // a well-formed request that cannot fit (memory, shape)
  kNotFound,         // a named file, model, device or schedule does not exist
  kCommError,        // message passing failed (MPI/NCCL), names rank and peer
  kComputeError,     // a compute action failed (LibTorch), names rank and action
  kInternal,         // an invariant of ours broke: a bug
};

// Returns a stable lower-case name of `code`, e.g. "invalid argument".
const char* StatusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;  // OK
  // The message is made printable (EscapeForTerminal, base/printable.h):
  // messages quote file content (a bad value, a name), and a control byte
  // or an ill-formed UTF-8 sequence from a file is written as \xHH instead of
  // reaching the terminal. Newlines, tabs and well-formed UTF-8 are kept,
  // nothing is cut.
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status Infeasible(std::string m) { return {StatusCode::kInfeasible, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status CommError(std::string m) { return {StatusCode::kCommError, std::move(m)}; }
  static Status ComputeError(std::string m) { return {StatusCode::kComputeError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>", or "OK".
  std::string ToString() const;
  // Returns a copy whose message is "<context>: <message>" (OK stays OK).
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Holds either a value or a non-OK Status. value() on an error aborts (a bug).
template <typename T>
class StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT
  StatusOr(T value) : value_(std::move(value)) {}                                  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace pw

#define PW_CONCAT_INNER_(a, b) a##b
#define PW_CONCAT_(a, b) PW_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` (a Status) is not OK.
#define PW_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::pw::Status pw_status_ = (expr);        \
    if (!pw_status_.ok()) return pw_status_; \
  } while (0)

// `lhs = value of expr` where expr is a StatusOr; returns its Status on error.
#define PW_ASSIGN_OR_RETURN(lhs, expr) PW_ASSIGN_OR_RETURN_IMPL_(PW_CONCAT_(pw_sor_, __LINE__), lhs, expr)
#define PW_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
