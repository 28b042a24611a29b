// Field access for the plan reader (plan_json.cc, model_section.cc): every
// error names the file and the field's path, e.g. "plan.json:
// stages[2].cost_s.F: must be a finite number >= 0, got -1". Internal to plan/.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "base/status.h"

namespace pw::plan_json {

using nlohmann::json;

// "a.b", or "b" at the top level.
inline std::string Join(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }

// Field access with errors that name the path, e.g. "stages[2].cost_s.F".
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  Status Error(const std::string& path, const std::string& why) const {
    return Status::InvalidArgument(source_ + ": " + path + ": " + why);
  }
  // The source followed by `path` ("plan.json: device"), for readers of
  // sections that write their own "<source>: field ..." errors.
  std::string Where(const std::string& path) const { return source_ + ": " + path; }
  Status Get(const json& obj, const std::string& path, const char* key, const json** out) const {
    if (!obj.is_object()) return Error(path.empty() ? "(top level)" : path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) return Error(Join(path, key), "field is missing");
    *out = &*it;
    return Status::Ok();
  }
  // An integer or a number; integers must fit T exactly.
  template <typename T>
  Status Number(const json& obj, const std::string& path, const char* key, T* out) const {
    const json* v;
    PW_RETURN_IF_ERROR(Get(obj, path, key, &v));
    return Value(*v, Join(path, key), out);
  }
  template <typename T>
  Status Value(const json& v, const std::string& p, T* out) const {
    if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) return Error(p, "expected an integer, got " + Dump(v));
      if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())
                                 : (v.get<int64_t>() < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
                                    v.get<int64_t>() > static_cast<int64_t>(std::numeric_limits<T>::max())))
        return Error(p, "integer out of range, got " + Dump(v));
    } else {
      if (!v.is_number()) return Error(p, "expected a number, got " + Dump(v));
    }
    *out = v.get<T>();
    return Status::Ok();
  }
  // A finite number >= 0 (seconds, bytes per second, bytes): negative or
  // non-finite values would make the simulation meaningless.
  template <typename T>
  Status NonNegative(const json& obj, const std::string& path, const char* key, T* out) const {
    PW_RETURN_IF_ERROR(Number(obj, path, key, out));
    const double x = static_cast<double>(*out);
    if (!std::isfinite(x) || x < 0)
      return Error(Join(path, key), "must be a finite number >= 0, got " + Dump(obj.at(key)));
    return Status::Ok();
  }
  template <typename T>
  Status Positive(const json& obj, const std::string& path, const char* key, T* out) const {
    PW_RETURN_IF_ERROR(Number(obj, path, key, out));
    const double x = static_cast<double>(*out);
    if (!std::isfinite(x) || x <= 0) return Error(Join(path, key), "must be > 0, got " + Dump(obj.at(key)));
    return Status::Ok();
  }
  Status Bool(const json& obj, const std::string& path, const char* key, bool* out) const {
    const json* v;
    PW_RETURN_IF_ERROR(Get(obj, path, key, &v));
    if (!v->is_boolean()) return Error(Join(path, key), "expected true or false, got " + Dump(*v));
    *out = v->get<bool>();
    return Status::Ok();
  }
  Status String(const json& obj, const std::string& path, const char* key, std::string* out) const {
    const json* v;
    PW_RETURN_IF_ERROR(Get(obj, path, key, &v));
    if (!v->is_string()) return Error(Join(path, key), "expected a string, got " + Dump(*v));
    *out = v->get<std::string>();
    // Names are printed (show's title, summaries): no terminal escapes.
    for (char c : *out)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
        return Error(Join(path, key), "holds a control character, got " + Dump(*v));
    return Status::Ok();
  }
  // One of `choices`; the error lists them.
  Status Choice(const json& obj, const std::string& path, const char* key, std::initializer_list<const char*> choices,
                std::string* out) const {
    PW_RETURN_IF_ERROR(String(obj, path, key, out));
    std::string list;
    for (const char* c : choices) {
      if (*out == c) return Status::Ok();
      list += (list.empty() ? "" : ", ") + std::string(c);
    }
    return Error(Join(path, key), "must be one of " + list + ", got '" + *out + "'");
  }
  // The same with choices known at run time (a registry's names).
  Status Choice(const json& obj, const std::string& path, const char* key, const std::vector<std::string>& choices,
                std::string* out) const {
    PW_RETURN_IF_ERROR(String(obj, path, key, out));
    std::string list;
    for (const std::string& c : choices) {
      if (*out == c) return Status::Ok();
      list += (list.empty() ? "" : ", ") + c;
    }
    return Error(Join(path, key), "must be one of " + list + ", got '" + *out + "'");
  }
  // A short rendering of a value for errors (a whole sub-document is cut).
  static std::string Dump(const json& v) {
    // ASCII only (ensure_ascii): cutting it below cannot split a character.
    std::string d = v.dump(-1, ' ', true, json::error_handler_t::replace);
    return d.size() > 80 ? d.substr(0, 77) + "..." : d;
  }

 private:
  std::string source_;
};

}  // namespace pw::plan_json
