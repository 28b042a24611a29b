#include "base/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace pw {

Status WriteFileAtomic(const std::string& path, const std::string& text) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Status::InvalidArgument("cannot write '" + path + "': it is a directory (give a file name)");
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status::InvalidArgument("cannot write '" + path + "' (cannot create '" + tmp +
                                     "': " + std::strerror(errno) + ")");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::InvalidArgument("cannot write '" + path + "' (write to '" + tmp + "' failed)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::InvalidArgument("cannot write '" + path + "' (rename from '" + tmp + "' failed: " + why + ")");
  }
  return Status::Ok();
}

}  // namespace pw
