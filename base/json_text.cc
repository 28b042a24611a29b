#include "base/json_text.h"

#include "base/limits.h"
#include "base/printable.h"

namespace pw {

StatusOr<nlohmann::json> ParseJsonText(const std::string& text, const std::string& source) {
  using nlohmann::json;
  json doc;
  bool too_deep = false;
  try {
    // The callback sees each value's depth; returning false drops the value,
    // so a hostile nesting is never built.
    doc = json::parse(text, [&too_deep](int depth, json::parse_event_t event, json&) {
      if (depth > limits::kMaxJsonDepth &&
          (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start)) {
        too_deep = true;
        return false;
      }
      return !too_deep || depth <= limits::kMaxJsonDepth;
    });
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    return Status::InvalidArgument(source +
                                   ": not valid JSON (truncated or corrupt file?): " + EscapeForTerminal(e.what()));
  }
  if (too_deep)
    return Status::InvalidArgument(source + ": JSON nested deeper than the limit of " +
                                   std::to_string(limits::kMaxJsonDepth) + " levels");
  return doc;
}

}  // namespace pw
