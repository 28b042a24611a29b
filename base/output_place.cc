#include "base/output_place.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace pw {

namespace fs = std::filesystem;

namespace {

Status Bad(const std::string& flag, const std::string& path, const std::string& why) {
  return Status::InvalidArgument(flag + " " + path + ": " + why);
}

// A name for a probe in `dir` no other process uses.
std::string ProbeName(const fs::path& dir) {
  return (dir / (".pipewright-probe-" + std::to_string(getpid()))).string();
}

// Creates and removes a file in `dir`.
Status ProbeFile(const std::string& flag, const std::string& path, const fs::path& dir) {
  const std::string probe = ProbeName(dir);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    const int err = errno;
    return Bad(flag, path, "cannot create a file in '" + dir.string() + "' (" + std::strerror(err) + ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

}  // namespace

Status CheckOutputFile(const std::string& flag, const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Bad(flag, path, "is a directory, not a file");
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) return Bad(flag, path, "its directory '" + dir.string() + "' does not exist");
  return ProbeFile(flag, path, dir);
}

Status CheckOutputDirectory(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) return Bad(flag, dir, "exists and is not a directory");
    return ProbeFile(flag, dir, dir);
  }
  // The nearest ancestor that exists: the directories below it will be
  // created, so one probe directory made there stands for them.
  fs::path ancestor = fs::absolute(dir, ec).parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, ec) && ancestor != ancestor.root_path())
    ancestor = ancestor.parent_path();
  if (!fs::is_directory(ancestor, ec)) return Bad(flag, dir, "'" + ancestor.string() + "' is not a directory");
  const std::string probe = ProbeName(ancestor);
  if (::mkdir(probe.c_str(), 0700) != 0) {
    const int err = errno;
    return Bad(flag, dir, "cannot create a directory in '" + ancestor.string() + "' (" + std::strerror(err) + ")");
  }
  ::rmdir(probe.c_str());
  return Status::Ok();
}

}  // namespace pw
