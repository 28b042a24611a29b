#include "executor/comm/agree.h"

#include <string>

namespace pw::exec {

Status AgreeOnStatus(const Status& mine, Communicator& comm) {
  // "" = OK; else "<code number>:<message>".
  const std::string wire =
      mine.ok() ? std::string() : std::to_string(static_cast<int>(mine.code())) + ":" + mine.message();
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.AllGather(wire));
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    if (static_cast<int>(r) == comm.rank()) return mine;
    const size_t colon = all[r].find(':');
    StatusCode code = StatusCode::kInternal;
    if (colon != std::string::npos) {
      const int n = std::atoi(all[r].substr(0, colon).c_str());
      if (n > 0 && n <= static_cast<int>(StatusCode::kInternal)) code = static_cast<StatusCode>(n);
    }
    return Status(code, "rank " + std::to_string(r) + ": " + all[r].substr(colon == std::string::npos ? 0 : colon + 1));
  }
  return Status::Ok();
}

}  // namespace pw::exec
