// Writing a file so that a reader never sees half of it: the one writer of
// every file pipewright produces (plans, CSVs, reports, manifests, traces).
#pragma once

#include <string>

#include "base/status.h"

namespace pw {

// Writes `text` to `path` atomically: a temporary file "<path>.tmp.<pid>" in
// the same directory, then rename(2). InvalidArgument naming the path (and
// the system error) when `path` is a directory or cannot be written; on
// error nothing is left at `path` that was not there before, nor a
// temporary file.
Status WriteFileAtomic(const std::string& path, const std::string& text);

}  // namespace pw
