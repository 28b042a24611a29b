// Layer costs from a measured profile: fitting every (kind, quantity) and
// evaluating the fits for a micro-batch size and sequence length, with the
// extrapolation warnings (profile_fit.h).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/spec/model_config.h"
#include "planner/profile_fit.h"

namespace pw {

namespace {

using nlohmann::json;

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

Status SameWidth(const ModelConfig& a, const ModelConfig& b, const std::string& what) {
  auto differ = [&](const char* key, int64_t x, int64_t y) {
    return Status::InvalidArgument(what + ": " + key + " is " + std::to_string(y) +
                                   " but the profile was measured with " + std::to_string(x) +
                                   " (only the number of blocks may differ; run `pipewright "
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

Status FitProfile(Profile& profile, const std::map<std::string, int64_t>& static_bytes,
                  const std::map<std::string, double>& optimizer_s) {
  profile.fits.clear();
  for (const char* kind : kProfileKinds) {
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
    PW_RETURN_IF_ERROR(fit(
        "F", [](const ProfileSample& s) { return s.f; }, time_features, &kf.f));
    PW_RETURN_IF_ERROR(fit(
        "I", [](const ProfileSample& s) { return s.i; }, time_features, &kf.i));
    PW_RETURN_IF_ERROR(fit(
        "W", [](const ProfileSample& s) { return s.w; }, {"tokens", "one"}, &kf.w));
    PW_RETURN_IF_ERROR(fit(
        "B", [](const ProfileSample& s) { return s.b; }, time_features, &kf.b));
    PW_RETURN_IF_ERROR(fit(
        "activation_bytes", [](const ProfileSample& s) { return static_cast<double>(s.activation_bytes); },
        time_features, &kf.activation_bytes));
    PW_RETURN_IF_ERROR(fit(
        "wstash_bytes", [](const ProfileSample& s) { return static_cast<double>(s.wstash_bytes); }, {"tokens", "one"},
        &kf.wstash_bytes));
    auto it = static_bytes.find(kind);
    kf.static_bytes = it != static_bytes.end() ? it->second : 0;
    auto opt = optimizer_s.find(kind);
    kf.optimizer_s = opt != optimizer_s.end() ? opt->second : 0.0;
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
  return FitCollectives(profile);
}

Status FitCollectives(Profile& profile) {
  profile.collective_fits.clear();
  std::map<std::pair<std::string, int>, std::vector<FitPoint>> by_group;
  for (const CollectiveSample& c : profile.collective_samples)
    by_group[{c.kind, c.ranks}].push_back({c.bytes, 1, c.seconds});
  for (const auto& [key, pts] : by_group) {
    auto r = FitLeastSquares(pts, {"bytes", "one"});
    if (!r.ok())
      return r.status().WithContext("fitting " + key.first + " over " + std::to_string(key.second) +
                                    " ranks: latency + bytes / bandwidth");
    CollectiveFit f;
    f.kind = key.first;
    f.ranks = key.second;
    f.model.latency_s = std::max(0.0, r->coefficients[1]);
    f.model.bandwidth_bytes_per_s = r->coefficients[0] > 0 ? 1.0 / r->coefficients[0] : 0.0;
    profile.collective_fits.push_back(f);
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
    for (const char* q : kProfileQuantities) {
      const LinearFit& f = QuantityFit(k, q);
      const double y = f.Evaluate(b, s);
      if (y <= 0 && !f.IsZero()) {
        const char* unit = std::string(q).find("bytes") != std::string::npos ? " B" : " s";
        char value[64];
        std::snprintf(value, sizeof value, "%.4g%s", y, unit);
        return Status::InvalidArgument(
            (profile.source.empty() ? std::string() : profile.source + ": ") + "the " + kind + " " + QuantityName(q) +
            " fit predicts " + value + " at micro-batch size " + std::to_string(b) + " x seq length " +
            std::to_string(s) + " (" + std::to_string(b * s) + " tokens; " + RangeText(f) +
            "): a linear fit this far from its measurements is not a cost; plan a shape nearer the measured ones, "
            "or measure this one (pipewright profile --micro-batch-sizes " +
            std::to_string(b) + " --seq-lengths " + std::to_string(s) + ")");
      }
      predicted[kind][q] = std::max(0.0, y);  // 0 only for a fit that is identically 0
    }
  auto layer = [&](const std::string& kind, const std::string& name) -> Status {
    auto it = profile.fits.find(kind);
    if (it == profile.fits.end())
      return Status::InvalidArgument("the profile has no fit for layer kind '" + kind + "'");
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
    c.optimizer = k.optimizer_s;
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
  for (const char* kind : kProfileKinds) {
    auto it = profile.fits.find(kind);
    if (it == profile.fits.end()) continue;
    for (const char* q : kProfileQuantities) {
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

}  // namespace pw
