#include "planner/profile_fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/spec/model_config.h"

namespace pw {

namespace {

using nlohmann::json;

const std::vector<std::string> kKnownFeatures = {"tokens", "tokens_x_seq", "one", "bytes"};
const char* const kKinds[] = {"embedding", "block", "head"};

// Quantities of a layer kind, in file and message order.
const char* const kQuantities[] = {"F", "I", "W", "B", "activation_bytes", "wstash_bytes"};

const LinearFit& QuantityFit(const KindFit& k, const std::string& quantity) {
  if (quantity == "F") return k.f;
  if (quantity == "I") return k.i;
  if (quantity == "W") return k.w;
  if (quantity == "B") return k.b;
  if (quantity == "activation_bytes") return k.activation_bytes;
  return k.wstash_bytes;
}

// "F time", "activation bytes".
std::string QuantityName(const std::string& quantity) {
  if (quantity == "activation_bytes") return "activation bytes";
  if (quantity == "wstash_bytes") return "wstash bytes";
  return quantity + " time";
}

std::string RangeText(const LinearFit& f) {
  return f.max_tokens > 0 ? "measured " + std::to_string(f.min_tokens) + ".." + std::to_string(f.max_tokens) + " tokens"
                          : "measured range unknown";
}

json FitToJson(const LinearFit& f) {
  json j = {{"features", f.features},
            {"coefficients", f.coefficients},
            {"rel_rms_error", f.rel_rms_error},
            {"max_rel_error", f.max_rel_error},
            {"points", f.points}};
  if (f.max_tokens > 0) j["tokens_range"] = {f.min_tokens, f.max_tokens};
  return j;
}

Status FitFromJson(const json& j, const std::string& path, LinearFit* out) {
  if (!j.is_object() || !j.contains("features") || !j["features"].is_array() || !j.contains("coefficients") ||
      !j["coefficients"].is_array())
    return Status::InvalidArgument(path + " must be {\"features\": [...], \"coefficients\": [...]}");
  LinearFit f;
  for (const json& n : j["features"]) {
    if (!n.is_string() ||
        std::find(kKnownFeatures.begin(), kKnownFeatures.end(), n.get<std::string>()) == kKnownFeatures.end())
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
  f.rel_rms_error = j.value("rel_rms_error", 0.0);
  f.max_rel_error = j.value("max_rel_error", 0.0);
  f.points = j.value("points", 0);
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
Status SameWidth(const ModelConfig& a, const ModelConfig& b, const std::string& what) {
  auto differ = [&](const char* key, int64_t x, int64_t y) {
    return Status::InvalidArgument(what + ": " + key + " is " + std::to_string(y) + " but the profile was measured with " +
                                   std::to_string(x) + " (only the number of blocks may differ; run `pipewright "
                                   "profile` for this model)");
  };
  if (a.hidden != b.hidden) return differ("n_embd", a.hidden, b.hidden);
  if (a.num_heads != b.num_heads) return differ("n_head", a.num_heads, b.num_heads);
  if (a.ffn != b.ffn) return differ("n_inner", a.ffn, b.ffn);
  if (a.vocab != b.vocab) return differ("vocab_size", a.vocab, b.vocab);
  if (a.max_positions != b.max_positions) return differ("n_positions", a.max_positions, b.max_positions);
  return Status::Ok();
}

}  // namespace

double FeatureValue(const std::string& feature, int64_t b, int64_t s) {
  const double bd = static_cast<double>(b), sd = static_cast<double>(s);
  if (feature == "tokens") return bd * sd;
  if (feature == "tokens_x_seq") return bd * sd * sd;
  if (feature == "bytes") return bd;  // comm fits: b carries the message size
  return 1.0;                         // "one"
}

double LinearFit::Evaluate(int64_t b, int64_t s) const {
  double y = 0;
  for (size_t k = 0; k < features.size(); ++k) y += coefficients[k] * FeatureValue(features[k], b, s);
  return y;
}

bool LinearFit::Extrapolates(int64_t b, int64_t s) const {
  return max_tokens > 0 && (b * s < min_tokens || b * s > max_tokens);
}

bool LinearFit::IsZero() const {
  return std::all_of(coefficients.begin(), coefficients.end(), [](double c) { return c == 0.0; });
}

StatusOr<LinearFit> FitLeastSquares(const std::vector<FitPoint>& points, const std::vector<std::string>& features) {
  for (const std::string& f : features)
    if (std::find(kKnownFeatures.begin(), kKnownFeatures.end(), f) == kKnownFeatures.end())
      return Status::InvalidArgument("unknown fit feature '" + f + "' (known: tokens, tokens_x_seq, one, bytes)");
  const int n = static_cast<int>(points.size()), k = static_cast<int>(features.size());
  if (k == 0 || n < k)
    return Status::InvalidArgument("least squares needs at least as many points as features: " + std::to_string(n) +
                                   " points, " + std::to_string(k) + " features");
  // Design matrix X (n, k), targets y (n), row weights 1/y (relative error).
  Eigen::MatrixXd X(n, k);
  Eigen::VectorXd y(n);
  for (int r = 0; r < n; ++r) {
    const double w = points[r].y > 0 ? 1.0 / points[r].y : 1.0;
    for (int c = 0; c < k; ++c) X(r, c) = w * FeatureValue(features[c], points[r].b, points[r].s);
    y(r) = w * points[r].y;
  }
  // Scale columns to unit norm so that the rank test is not fooled by units
  // (tokens_x_seq is ~s times larger than tokens).
  Eigen::VectorXd scale(k);
  for (int c = 0; c < k; ++c) {
    scale(c) = X.col(c).norm();
    if (scale(c) == 0) return Status::InvalidArgument("fit feature '" + features[c] + "' is zero on every point");
    X.col(c) /= scale(c);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(X);
  qr.setThreshold(1e-10);
  if (qr.rank() < k)
    return Status::InvalidArgument("the fit features are collinear on these points (rank " + std::to_string(qr.rank()) +
                                   " < " + std::to_string(k) + "): measure more shapes");
  Eigen::VectorXd c = qr.solve(y);
  LinearFit fit;
  fit.features = features;
  fit.points = n;
  for (int j = 0; j < k; ++j) fit.coefficients.push_back(c(j) / scale(j));
  double sum_sq = 0;
  int counted = 0;
  for (const FitPoint& p : points) {
    double pred = 0;
    for (int j = 0; j < k; ++j) pred += fit.coefficients[j] * FeatureValue(features[j], p.b, p.s);
    if (p.y <= 0) continue;
    const double rel = (pred - p.y) / p.y;
    sum_sq += rel * rel;
    fit.max_rel_error = std::max(fit.max_rel_error, std::abs(rel));
    ++counted;
  }
  fit.rel_rms_error = counted > 0 ? std::sqrt(sum_sq / counted) : 0.0;
  return fit;
}

Status FitProfile(Profile& profile, const std::map<std::string, int64_t>& static_bytes) {
  profile.fits.clear();
  for (const char* kind : kKinds) {
    std::vector<const ProfileSample*> mine;
    for (const ProfileSample& s : profile.samples)
      if (s.kind == kind) mine.push_back(&s);
    if (mine.empty()) continue;
    bool several_seq = false;
    for (const ProfileSample* s : mine) several_seq |= s->seq_length != mine.front()->seq_length;
    std::vector<std::string> time_features = {"tokens", "one"};
    if (std::string(kind) == "block" && several_seq) time_features = {"tokens", "tokens_x_seq", "one"};
    int64_t min_tokens = 0, max_tokens = 0;
    for (const ProfileSample* s : mine) {
      const int64_t t = s->micro_batch_size * s->seq_length;
      min_tokens = min_tokens == 0 ? t : std::min(min_tokens, t);
      max_tokens = std::max(max_tokens, t);
    }
    auto fit = [&](const char* quantity, auto get, const std::vector<std::string>& feats, LinearFit* out) -> Status {
      std::vector<FitPoint> pts;
      for (const ProfileSample* s : mine) pts.push_back({s->micro_batch_size, s->seq_length, get(*s)});
      auto r = FitLeastSquares(pts, feats);
      if (!r.ok()) return r.status().WithContext(std::string("fitting ") + kind + " " + quantity);
      *out = *r;
      if (min_tokens > 0) {
        out->min_tokens = min_tokens;
        out->max_tokens = max_tokens;
      }
      return Status::Ok();
    };
    KindFit kf;
    PW_RETURN_IF_ERROR(fit("F", [](const ProfileSample& s) { return s.f; }, time_features, &kf.f));
    PW_RETURN_IF_ERROR(fit("I", [](const ProfileSample& s) { return s.i; }, time_features, &kf.i));
    PW_RETURN_IF_ERROR(fit("W", [](const ProfileSample& s) { return s.w; }, {"tokens", "one"}, &kf.w));
    PW_RETURN_IF_ERROR(fit("B", [](const ProfileSample& s) { return s.b; }, time_features, &kf.b));
    PW_RETURN_IF_ERROR(fit("activation_bytes",
                           [](const ProfileSample& s) { return static_cast<double>(s.activation_bytes); },
                           time_features, &kf.activation_bytes));
    PW_RETURN_IF_ERROR(fit("wstash_bytes", [](const ProfileSample& s) { return static_cast<double>(s.wstash_bytes); },
                           {"tokens", "one"}, &kf.wstash_bytes));
    auto it = static_bytes.find(kind);
    kf.static_bytes = it != static_bytes.end() ? it->second : 0;
    profile.fits[kind] = kf;
  }
  if (!profile.comm_samples.empty()) {
    std::vector<FitPoint> pts;
    for (const CommSample& c : profile.comm_samples) pts.push_back({c.bytes, 1, c.seconds});
    auto r = FitLeastSquares(pts, {"bytes", "one"});
    if (!r.ok()) return r.status().WithContext("fitting comm latency + bytes / bandwidth");
    profile.comm_fit = *r;
    CommModel cm;
    cm.latency_s = std::max(0.0, r->coefficients[1]);
    cm.bandwidth_bytes_per_s = r->coefficients[0] > 0 ? 1.0 / r->coefficients[0] : 0.0;  // <= 0: infinite
    profile.comm = cm;
  }
  return Status::Ok();
}

StatusOr<LayerCostTable> ProfileLayerCosts(const Profile& profile, const json& model, int64_t b, int64_t s) {
  if (b < 1 || s < 1)
    return Status::InvalidArgument("profile costs need micro-batch size and sequence length >= 1, got b=" +
                                   std::to_string(b) + " s=" + std::to_string(s));
  PW_ASSIGN_OR_RETURN(ModelConfig measured, ParseModelConfig(profile.model, "profile model"));
  PW_ASSIGN_OR_RETURN(ModelConfig want, ParseModelConfig(model, "model config"));
  PW_RETURN_IF_ERROR(SameWidth(measured, want, "model config"));
  if (s > want.max_positions)
    return Status::InvalidArgument("--seq-length " + std::to_string(s) + " exceeds the model's n_positions " +
                                   std::to_string(want.max_positions));
  LayerCostTable t;
  t.micro_batch_size = b;
  t.seq_length = s;
  t.recompute = "none";
  t.model = model;
  t.comm = profile.comm;
  // Every quantity of every kind, evaluated once (the blocks share theirs).
  std::map<std::string, std::map<std::string, double>> predicted;  // kind -> quantity -> value
  for (const auto& [kind, k] : profile.fits)
    for (const char* q : kQuantities) {
      const LinearFit& f = QuantityFit(k, q);
      const double y = f.Evaluate(b, s);
      if (y <= 0 && !f.IsZero()) {
        const char* unit = std::string(q).find("bytes") != std::string::npos ? " B" : " s";
        char value[64];
        std::snprintf(value, sizeof value, "%.4g%s", y, unit);
        return Status::InvalidArgument(
            (profile.source.empty() ? std::string() : profile.source + ": ") + "the " + kind + " " +
            QuantityName(q) + " fit predicts " + value + " at micro-batch size " + std::to_string(b) +
            " x seq length " + std::to_string(s) + " (" + std::to_string(b * s) + " tokens; " + RangeText(f) +
            "): a linear fit this far from its measurements is not a cost; plan a shape nearer the measured ones, "
            "or measure this one (pipewright profile --micro-batch-sizes " + std::to_string(b) + " --seq-lengths " +
            std::to_string(s) + ")");
      }
      predicted[kind][q] = std::max(0.0, y);  // 0 only for a fit that is identically 0
    }
  auto layer = [&](const std::string& kind, const std::string& name) -> Status {
    auto it = profile.fits.find(kind);
    if (it == profile.fits.end()) return Status::InvalidArgument("the profile has no fit for layer kind '" + kind + "'");
    const KindFit& k = it->second;
    const std::map<std::string, double>& y = predicted.at(kind);
    LayerCost c;
    c.name = name;
    c.kind = kind;
    c.f = y.at("F");
    c.i = y.at("I");
    c.w = y.at("W");
    c.b = y.at("B");
    c.activation_bytes = std::llround(y.at("activation_bytes"));
    c.wstash_bytes = std::llround(y.at("wstash_bytes"));
    c.static_bytes = k.static_bytes;
    // The head's output is the scalar loss (fp32); the others send (b, s, C).
    c.output_bytes = kind == "head" ? 4 : b * s * want.hidden * profile.element_bytes;
    t.layers.push_back(std::move(c));
    return Status::Ok();
  };
  PW_RETURN_IF_ERROR(layer("embedding", "embedding"));
  for (int l = 0; l < want.num_layers; ++l) PW_RETURN_IF_ERROR(layer("block", "block." + std::to_string(l)));
  PW_RETURN_IF_ERROR(layer("head", "head"));
  return t;
}

std::vector<Extrapolation> FindExtrapolations(const Profile& profile, int64_t b, int64_t s) {
  std::vector<Extrapolation> out;
  for (const char* kind : kKinds) {
    auto it = profile.fits.find(kind);
    if (it == profile.fits.end()) continue;
    for (const char* q : kQuantities) {
      const LinearFit& f = QuantityFit(it->second, q);
      if (f.Extrapolates(b, s)) out.push_back({kind, q, b, s, f.min_tokens, f.max_tokens});
    }
  }
  return out;
}

std::vector<std::string> FormatExtrapolationWarnings(const std::vector<Extrapolation>& found,
                                                     const std::string& source) {
  // Group by (kind, measured range), keeping first-seen order; within a
  // group, quantities and shapes once each, in first-seen order.
  struct Group {
    std::string kind;
    int64_t lo = 0, hi = 0;
    std::vector<std::string> quantities;
    std::vector<std::pair<int64_t, int64_t>> shapes;
  };
  std::vector<Group> groups;
  for (const Extrapolation& e : found) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
      return x.kind == e.kind && x.lo == e.min_tokens && x.hi == e.max_tokens;
    });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{e.kind, e.min_tokens, e.max_tokens, {}, {}});
    if (std::find(g->quantities.begin(), g->quantities.end(), e.quantity) == g->quantities.end())
      g->quantities.push_back(e.quantity);
    const std::pair<int64_t, int64_t> shape{e.micro_batch_size, e.seq_length};
    if (std::find(g->shapes.begin(), g->shapes.end(), shape) == g->shapes.end()) g->shapes.push_back(shape);
  }
  std::vector<std::string> lines;
  for (const Group& g : groups) {
    std::string q, shapes;
    for (const std::string& x : g.quantities) q += (q.empty() ? "" : ", ") + QuantityName(x);
    for (const auto& [b, s] : g.shapes)
      shapes += (shapes.empty() ? "" : ", ") + std::to_string(b) + "x" + std::to_string(s) + " (" +
                std::to_string(b * s) + " tokens)";
    lines.push_back((source.empty() ? std::string() : source + ": ") + g.kind + " " + q +
                    " extrapolated to micro-batch size x seq length " + shapes + ", outside the measured " +
                    std::to_string(g.lo) + ".." + std::to_string(g.hi) +
                    " tokens: these costs are a linear fit's guess (pipewright profile can measure the shape)");
  }
  return lines;
}

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
  json fits = json::object();
  for (const auto& [kind, k] : p.fits)
    fits[kind] = {{"F", FitToJson(k.f)},
                  {"I", FitToJson(k.i)},
                  {"W", FitToJson(k.w)},
                  {"B", FitToJson(k.b)},
                  {"activation_bytes", FitToJson(k.activation_bytes)},
                  {"wstash_bytes", FitToJson(k.wstash_bytes)},
                  {"static_bytes", k.static_bytes}};
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

StatusOr<Profile> ParseProfile(const json& j, const std::string& source) {
  if (!IsProfileDocument(j))
    return Status::InvalidArgument(source + ": not a profile (needs \"format\": \"pipewright-profile\" and \"fits\"; "
                                            "write one with `pipewright profile`)");
  Profile p;
  if (j.contains("setup")) p.setup = j["setup"];
  if (!j.contains("model") || !j["model"].is_object())
    return Status::InvalidArgument(source + ": model must be the profiled GPT config object");
  p.model = j["model"];
  p.element_bytes = j.value("element_bytes", int64_t{4});
  p.micro_batch_size = j.value("micro_batch_size", int64_t{1});
  p.seq_length = j.value("seq_length", int64_t{1});
  const json& fits = j["fits"];
  if (!fits.is_object() || fits.empty()) return Status::InvalidArgument(source + ": fits must be a non-empty object");
  for (auto it = fits.begin(); it != fits.end(); ++it) {
    const std::string path = source + ": fits." + it.key();
    if (std::find(std::begin(kKinds), std::end(kKinds), it.key()) == std::end(kKinds))
      return Status::InvalidArgument(path + ": unknown layer kind (known: embedding, block, head)");
    KindFit k;
    const json& o = it.value();
    PW_RETURN_IF_ERROR(FitFromJson(o.value("F", json()), path + ".F", &k.f));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("I", json()), path + ".I", &k.i));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("W", json()), path + ".W", &k.w));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("B", json()), path + ".B", &k.b));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("activation_bytes", json()), path + ".activation_bytes", &k.activation_bytes));
    PW_RETURN_IF_ERROR(FitFromJson(o.value("wstash_bytes", json()), path + ".wstash_bytes", &k.wstash_bytes));
    if (!o.contains("static_bytes") || !o["static_bytes"].is_number_integer() || o["static_bytes"].get<int64_t>() < 0)
      return Status::InvalidArgument(path + ".static_bytes must be an integer >= 0 (bytes)");
    k.static_bytes = o["static_bytes"].get<int64_t>();
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
      for (const json& s : c["samples"]) p.comm_samples.push_back({s.value("bytes", int64_t{0}), s.value("seconds", 0.0)});
  }
  if (j.contains("samples") && j["samples"].is_array())
    for (const json& s : j["samples"]) {
      ProfileSample ps;
      ps.kind = s.value("kind", std::string());
      ps.micro_batch_size = s.value("micro_batch_size", int64_t{0});
      ps.seq_length = s.value("seq_length", int64_t{0});
      ps.f = s.value("F", 0.0);
      ps.i = s.value("I", 0.0);
      ps.w = s.value("W", 0.0);
      ps.b = s.value("B", 0.0);
      ps.activation_bytes = s.value("activation_bytes", int64_t{0});
      ps.wstash_bytes = s.value("wstash_bytes", int64_t{0});
      ps.output_bytes = s.value("output_bytes", int64_t{0});
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

std::string FormatProfileFits(const Profile& p) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-9s %-16s %-34s %-40s %9s %9s %6s\n", "kind", "quantity", "model",
                "coefficients", "rms err", "max err", "points");
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
