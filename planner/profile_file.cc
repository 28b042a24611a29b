// The profile file (format "pipewright-profile"): its JSON reader and
// writer, and the table of fits printed by `pipewright profile`
// (profile_fit.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "planner/profile_fit.h"

namespace pw {

namespace {

using nlohmann::json;

json FitToJson(const LinearFit& f) {
  json j = {{"features", f.features},
            {"coefficients", f.coefficients},
            {"rel_rms_error", f.rel_rms_error},
            {"max_rel_error", f.max_rel_error},
            {"points", f.points}};
  if (f.max_tokens > 0) j["tokens_range"] = {f.min_tokens, f.max_tokens};
  return j;
}

// The value under `key` as T (a string, a number, or an integer within
// [lo, hi]); `fallback` when absent. InvalidArgument names "<path>.<key>".
template <typename T>
Status Field(const json& j, const std::string& path, const char* key, T fallback, T* out, T lo = T(), T hi = T()) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    *out = fallback;
    return Status::Ok();
  }
  const std::string where = path + (!path.empty() && path.back() == ':' ? " " : ".") + key;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return Status::InvalidArgument(where + " must be a string, got " + it->dump());
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer() || it->get<int64_t>() < static_cast<int64_t>(lo) ||
        it->get<int64_t>() > static_cast<int64_t>(hi))
      return Status::InvalidArgument(where + " must be an integer in [" + std::to_string(lo) + ", " +
                                     std::to_string(hi) + "], got " + it->dump());
  } else {
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      return Status::InvalidArgument(where + " must be a finite number, got " + it->dump());
  }
  *out = it->get<T>();
  return Status::Ok();
}

// Shapes and counts a profile may hold: tokens per microbatch stay far below
// 2^24 x 2^24, so their products cannot overflow.
constexpr int64_t kMaxShape = int64_t{1} << 24;
constexpr int64_t kMaxBytes = int64_t{1} << 50;

Status FitFromJson(const json& j, const std::string& path, LinearFit* out) {
  if (!j.is_object() || !j.contains("features") || !j["features"].is_array() || !j.contains("coefficients") ||
      !j["coefficients"].is_array())
    return Status::InvalidArgument(path + " must be {\"features\": [...], \"coefficients\": [...]}");
  LinearFit f;
  for (const json& n : j["features"]) {
    if (!n.is_string() ||
        std::find(kProfileFeatures.begin(), kProfileFeatures.end(), n.get<std::string>()) == kProfileFeatures.end())
      return Status::InvalidArgument(path + ".features: unknown feature " + n.dump() +
                                     " (known: tokens, tokens_x_seq, one, bytes)");
    f.features.push_back(n.get<std::string>());
  }
  for (const json& c : j["coefficients"]) {
    if (!c.is_number()) return Status::InvalidArgument(path + ".coefficients must be numbers, got " + c.dump());
    f.coefficients.push_back(c.get<double>());
  }
  if (f.coefficients.size() != f.features.size())
    return Status::InvalidArgument(path + ".coefficients must be a list of " + std::to_string(f.features.size()) +
                                   " numbers (one per feature), got " + std::to_string(f.coefficients.size()));
  PW_RETURN_IF_ERROR(Field(j, path, "rel_rms_error", 0.0, &f.rel_rms_error));
  PW_RETURN_IF_ERROR(Field(j, path, "max_rel_error", 0.0, &f.max_rel_error));
  PW_RETURN_IF_ERROR(Field(j, path, "points", 0, &f.points, 0, 1 << 30));
  if (j.contains("tokens_range")) {
    const json& r = j["tokens_range"];
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer() ||
        r[0].get<int64_t>() < 1 || r[1].get<int64_t>() < r[0].get<int64_t>())
      return Status::InvalidArgument(path + ".tokens_range must be [min, max] tokens with 1 <= min <= max, got " +
                                     r.dump());
    f.min_tokens = r[0].get<int64_t>();
    f.max_tokens = r[1].get<int64_t>();
  }
  *out = std::move(f);
  return Status::Ok();
}

// Model keys the fits depend on (everything but the number of blocks).
}  // namespace

bool IsProfileDocument(const json& j) {
  return j.is_object() && j.contains("format") && j["format"] == "pipewright-profile" && j.contains("fits");
}

StatusOr<json> ProfileToJson(const Profile& p) {
  json j;
  j["format"] = "pipewright-profile";
  j["version"] = 1;
  j["setup"] = p.setup;
  j["model"] = p.model;
  j["element_bytes"] = p.element_bytes;
  j["micro_batch_size"] = p.micro_batch_size;
  j["seq_length"] = p.seq_length;
  j["recompute"] = "none";
  if (p.comm) {
    j["comm"] = {{"latency_s", p.comm->latency_s}, {"bandwidth_bytes_per_s", p.comm->bandwidth_bytes_per_s}};
    if (p.comm_fit) j["comm"]["fit"] = FitToJson(*p.comm_fit);
    json cs = json::array();
    for (const CommSample& c : p.comm_samples) cs.push_back({{"bytes", c.bytes}, {"seconds", c.seconds}});
    j["comm"]["samples"] = cs;
  }
  if (!p.collective_samples.empty()) {
    json cs = json::array(), fits_c = json::array();
    for (const CollectiveSample& c : p.collective_samples)
      cs.push_back({{"kind", c.kind}, {"ranks", c.ranks}, {"bytes", c.bytes}, {"seconds", c.seconds}});
    for (const CollectiveFit& f : p.collective_fits)
      fits_c.push_back({{"kind", f.kind},
                        {"ranks", f.ranks},
                        {"latency_s", f.model.latency_s},
                        {"bandwidth_bytes_per_s", f.model.bandwidth_bytes_per_s}});
    j["collectives"] = {{"samples", cs}, {"fits", fits_c}};
  }
  json fits = json::object();
  for (const auto& [kind, k] : p.fits) {
    fits[kind] = {{"F", FitToJson(k.f)},
                  {"I", FitToJson(k.i)},
                  {"W", FitToJson(k.w)},
                  {"B", FitToJson(k.b)},
                  {"activation_bytes", FitToJson(k.activation_bytes)},
                  {"wstash_bytes", FitToJson(k.wstash_bytes)},
                  {"static_bytes", k.static_bytes}};
    if (k.optimizer_s > 0) fits[kind]["optimizer_s"] = k.optimizer_s;
  }
  j["fits"] = fits;
  json samples = json::array();
  for (const ProfileSample& s : p.samples)
    samples.push_back({{"kind", s.kind},
                       {"micro_batch_size", s.micro_batch_size},
                       {"seq_length", s.seq_length},
                       {"F", s.f},
                       {"I", s.i},
                       {"W", s.w},
                       {"B", s.b},
                       {"activation_bytes", s.activation_bytes},
                       {"wstash_bytes", s.wstash_bytes},
                       {"output_bytes", s.output_bytes}});
  j["samples"] = samples;
  PW_ASSIGN_OR_RETURN(LayerCostTable t, ProfileLayerCosts(p, p.model, p.micro_batch_size, p.seq_length));
  j["layers"] = LayerCostsToJson(t)["layers"];
  return j;
}

namespace {

StatusOr<Profile> ParseProfileFields(const json& j, const std::string& source) {
  if (!IsProfileDocument(j))
    return Status::InvalidArgument(source +
                                   ": not a profile (needs \"format\": \"pipewright-profile\" and \"fits\"; "
                                   "write one with `pipewright profile`)");
  Profile p;
  if (j.contains("setup")) p.setup = j["setup"];
  if (!j.contains("model") || !j["model"].is_object())
    return Status::InvalidArgument(source + ": model must be the profiled GPT config object");
  p.model = j["model"];
  PW_RETURN_IF_ERROR(Field(j, source + ":", "element_bytes", int64_t{4}, &p.element_bytes, int64_t{1}, int64_t{16}));
  PW_RETURN_IF_ERROR(
      Field(j, source + ":", "micro_batch_size", int64_t{1}, &p.micro_batch_size, int64_t{1}, kMaxShape));
  PW_RETURN_IF_ERROR(Field(j, source + ":", "seq_length", int64_t{1}, &p.seq_length, int64_t{1}, kMaxShape));
  const json& fits = j["fits"];
  if (!fits.is_object() || fits.empty()) return Status::InvalidArgument(source + ": fits must be a non-empty object");
  for (auto it = fits.begin(); it != fits.end(); ++it) {
    const std::string path = source + ": fits." + it.key();
    if (std::find(std::begin(kProfileKinds), std::end(kProfileKinds), it.key()) == std::end(kProfileKinds))
      return Status::InvalidArgument(path + ": unknown layer kind (known: embedding, block, head)");
    KindFit k;
    const json& o = it.value();
    if (!o.is_object())
      return Status::InvalidArgument(path + " must be an object of fits, got " + o.dump().substr(0, 80));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("F", json()), path + ".F", &k.f));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("I", json()), path + ".I", &k.i));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("W", json()), path + ".W", &k.w));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("B", json()), path + ".B", &k.b));
    PW_RETURN_IF_ERROR(
        FitFromJson(o.value("activation_bytes", json()), path + ".activation_bytes", &k.activation_bytes));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("wstash_bytes", json()), path + ".wstash_bytes", &k.wstash_bytes));
    if (!o.contains("static_bytes") || !o["static_bytes"].is_number_integer() || o["static_bytes"].get<int64_t>() < 0)
      return Status::InvalidArgument(path + ".static_bytes must be an integer >= 0 (bytes)");
    k.static_bytes = o["static_bytes"].get<int64_t>();
    if (o.contains("optimizer_s")) {
      if (!o["optimizer_s"].is_number() || !(o["optimizer_s"].get<double>() >= 0) ||
          !std::isfinite(o["optimizer_s"].get<double>()))
        return Status::InvalidArgument(path + ".optimizer_s must be a finite number >= 0 (seconds per step)");
      k.optimizer_s = o["optimizer_s"].get<double>();
    }
    p.fits[it.key()] = k;
  }
  if (j.contains("comm")) {
    const json& c = j["comm"];
    if (!c.is_object() || !c.contains("latency_s") || !c["latency_s"].is_number() ||
        !c.contains("bandwidth_bytes_per_s") || !c["bandwidth_bytes_per_s"].is_number())
      return Status::InvalidArgument(source + ": comm must be {\"latency_s\": s, \"bandwidth_bytes_per_s\": B/s}");
    p.comm = CommModel{c["latency_s"].get<double>(), c["bandwidth_bytes_per_s"].get<double>()};
    if (c.contains("fit")) {
      LinearFit f;
      PW_RETURN_IF_ERROR(FitFromJson(c["fit"], source + ": comm.fit", &f));
      p.comm_fit = f;
    }
    if (c.contains("samples") && c["samples"].is_array())
      for (size_t n = 0; n < c["samples"].size(); ++n) {
        const json& s = c["samples"][n];
        const std::string where = source + ": comm.samples[" + std::to_string(n) + "]";
        if (!s.is_object()) return Status::InvalidArgument(where + " must be an object");
        CommSample cs;
        PW_RETURN_IF_ERROR(Field(s, where, "bytes", int64_t{0}, &cs.bytes, int64_t{0}, kMaxBytes));
        PW_RETURN_IF_ERROR(Field(s, where, "seconds", 0.0, &cs.seconds));
        p.comm_samples.push_back(cs);
      }
  }
  if (j.contains("collectives")) {
    // Tensor-parallel collectives: the samples are read and fitted again
    // (FitProfile), the written fits are for people.
    const json& c = j["collectives"];
    if (!c.is_object() || !c.contains("samples") || !c["samples"].is_array())
      return Status::InvalidArgument(source + ": collectives must be {\"samples\": [...], \"fits\": [...]}");
    for (size_t n = 0; n < c["samples"].size(); ++n) {
      const json& s = c["samples"][n];
      const std::string where = source + ": collectives.samples[" + std::to_string(n) + "]";
      if (!s.is_object()) return Status::InvalidArgument(where + " must be an object");
      CollectiveSample cs;
      int64_t ranks = 0;
      PW_RETURN_IF_ERROR(Field(s, where, "kind", std::string(), &cs.kind));
      if (cs.kind != "all-reduce" && cs.kind != "reduce-scatter" && cs.kind != "all-gather")
        return Status::InvalidArgument(where + ".kind is '" + cs.kind +
                                       "': must be all-reduce, reduce-scatter or all-gather");
      PW_RETURN_IF_ERROR(Field(s, where, "ranks", int64_t{0}, &ranks, int64_t{2}, int64_t{1} << 20));
      cs.ranks = static_cast<int>(ranks);
      PW_RETURN_IF_ERROR(Field(s, where, "bytes", int64_t{0}, &cs.bytes, int64_t{1}, kMaxBytes));
      PW_RETURN_IF_ERROR(Field(s, where, "seconds", 0.0, &cs.seconds));
      p.collective_samples.push_back(cs);
    }
    PW_RETURN_IF_ERROR(FitCollectives(p).WithContext(source));
  }
  if (j.contains("samples") && j["samples"].is_array())
    for (size_t n = 0; n < j["samples"].size(); ++n) {
      const json& s = j["samples"][n];
      const std::string where = source + ": samples[" + std::to_string(n) + "]";
      if (!s.is_object()) return Status::InvalidArgument(where + " must be an object");
      ProfileSample ps;
      PW_RETURN_IF_ERROR(Field(s, where, "kind", std::string(), &ps.kind));
      PW_RETURN_IF_ERROR(Field(s, where, "micro_batch_size", int64_t{0}, &ps.micro_batch_size, int64_t{0}, kMaxShape));
      PW_RETURN_IF_ERROR(Field(s, where, "seq_length", int64_t{0}, &ps.seq_length, int64_t{0}, kMaxShape));
      PW_RETURN_IF_ERROR(Field(s, where, "F", 0.0, &ps.f));
      PW_RETURN_IF_ERROR(Field(s, where, "I", 0.0, &ps.i));
      PW_RETURN_IF_ERROR(Field(s, where, "W", 0.0, &ps.w));
      PW_RETURN_IF_ERROR(Field(s, where, "B", 0.0, &ps.b));
      PW_RETURN_IF_ERROR(Field(s, where, "activation_bytes", int64_t{0}, &ps.activation_bytes, int64_t{0}, kMaxBytes));
      PW_RETURN_IF_ERROR(Field(s, where, "wstash_bytes", int64_t{0}, &ps.wstash_bytes, int64_t{0}, kMaxBytes));
      PW_RETURN_IF_ERROR(Field(s, where, "output_bytes", int64_t{0}, &ps.output_bytes, int64_t{0}, kMaxBytes));
      p.samples.push_back(ps);
    }
  // Fits without a recorded range (older files) get their kind's samples'.
  for (auto& [kind, k] : p.fits) {
    int64_t lo = 0, hi = 0;
    for (const ProfileSample& s : p.samples)
      if (s.kind == kind && s.micro_batch_size > 0 && s.seq_length > 0) {
        const int64_t t = s.micro_batch_size * s.seq_length;
        lo = lo == 0 ? t : std::min(lo, t);
        hi = std::max(hi, t);
      }
    if (hi == 0) continue;
    for (LinearFit* f : {&k.f, &k.i, &k.w, &k.b, &k.activation_bytes, &k.wstash_bytes})
      if (f->max_tokens == 0) {
        f->min_tokens = lo;
        f->max_tokens = hi;
      }
  }
  // The fits must evaluate on the profiled model (catches a bad model object).
  auto check = ProfileLayerCosts(p, p.model, p.micro_batch_size, p.seq_length);
  if (!check.ok()) return check.status().WithContext(source);
  p.source = source;  // after the check: its message already starts with `source`
  return p;
}

}  // namespace

StatusOr<Profile> ParseProfile(const json& j, const std::string& source) {
  // Every field is checked above; a type this reader did not foresee still
  // ends as an error naming the file, never an abort.
  try {
    return ParseProfileFields(j, source);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(source + ": " + e.what());
  }
}

std::string FormatProfileFits(const Profile& p) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-9s %-16s %-34s %-40s %9s %9s %6s\n", "kind", "quantity", "model", "coefficients",
                "rms err", "max err", "points");
  out += line;
  auto row = [&](const std::string& kind, const std::string& q, const LinearFit& f) {
    std::string model, coef;
    for (size_t k = 0; k < f.features.size(); ++k) {
      model += (k ? " + c" : "c") + std::to_string(k) + "*" + f.features[k];
      char c[32];
      std::snprintf(c, sizeof c, "%s%.4g", k ? " " : "", f.coefficients[k]);
      coef += c;
    }
    std::snprintf(line, sizeof line, "%-9s %-16s %-34s %-40s %8.2f%% %8.2f%% %6d\n", kind.c_str(), q.c_str(),
                  model.c_str(), coef.c_str(), 100 * f.rel_rms_error, 100 * f.max_rel_error, f.points);
    out += line;
  };
  for (const auto& [kind, k] : p.fits) {
    row(kind, "F (s)", k.f);
    row(kind, "I (s)", k.i);
    row(kind, "W (s)", k.w);
    row(kind, "B (s)", k.b);
    row(kind, "activation (B)", k.activation_bytes);
    row(kind, "wstash (B)", k.wstash_bytes);
  }
  if (p.comm_fit) row("p2p", "one-way (s)", *p.comm_fit);
  return out;
}

}  // namespace pw
