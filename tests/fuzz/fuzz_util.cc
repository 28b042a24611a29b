#include "tests/fuzz/fuzz_util.h"

#include "base/printable.h"

namespace pw::fuzz {

void CheckPrintable(const std::string& message) {
  // Messages may be long (a grid), but never hold a control character other
  // than newline and tab: those would come from a file's bytes.
  Check(EscapeForTerminal(message, message.size()) == message, "error message holds unprintable bytes", message);
}

}  // namespace pw::fuzz
