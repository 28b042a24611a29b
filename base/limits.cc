#include "base/limits.h"

namespace pw::limits {

Status CheckRange(const std::string& what, int64_t value, int64_t limit, const std::string& reason) {
  if (value < 1) return Status::InvalidArgument(what + " must be >= 1, got " + std::to_string(value));
  if (value > limit)
    return Status::InvalidArgument(what + " " + std::to_string(value) + " is above the limit of " +
                                   std::to_string(limit) + " (" + reason + ")");
  return Status::Ok();
}

}  // namespace pw::limits
