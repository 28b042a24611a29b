// Output places checked before the work: a run that would train for hours
// and then fail to write its --save, --trace or --checkpoint-dir output
// (a typo, /proc, /sys, a read-only mount, a full permission set) is refused
// before the first step instead. Each check creates something where the
// output will go and removes it at once: nothing is left behind.
#pragma once

#include <string>

#include "base/status.h"

namespace pw {

// `path` names a file that will be written later (atomically: a temp file
// beside it, then rename). OK if a file can be created in its directory now.
// Errors (InvalidArgument) start with "<flag> <path>: " and give the reason:
// the directory does not exist, `path` is a directory, or the creation
// failed (strerror: "Permission denied", "No such file or directory" under
// /proc, "Read-only file system").
Status CheckOutputFile(const std::string& flag, const std::string& path);

// `dir` names a directory that will be created if missing (with its
// parents) and written into later. OK if it exists as a directory and a
// file can be created in it, or, when missing, if a directory can be created
// in its nearest existing ancestor (the probe directory is removed; `dir`
// itself is not created). Errors as CheckOutputFile: "exists and is not a
// directory", "<ancestor> is not a directory", or the failed creation.
Status CheckOutputDirectory(const std::string& flag, const std::string& dir);

}  // namespace pw
