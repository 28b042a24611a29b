// Measured profiles -> per-layer cost models. `pipewright profile` measures
// each layer kind of a GPT (embedding, block, head+loss) for several shapes;
// this file fits linear models to those samples by least squares (Eigen),
// reports the fit error, writes/reads the profile file, and turns a profile
// into the per-layer cost table the planner partitions, for any micro-batch
// size and sequence length. Torch-free.
//
// Profile file (a layer-cost document, models/spec/layer_costs.h, so any
// reader of layer costs accepts it; the extra keys are ignored there):
//   {"format": "pipewright-profile", "version": 1,
//    "setup": {"device": "...", "threads": 1, "dtype": "float32", ...},
//    "model": {...GPT config...}, "micro_batch_size": b0, "seq_length": s0,
//    "recompute": "none",
//    "comm": {"latency_s": ..., "bandwidth_bytes_per_s": ..., "fit": FIT},
//    "fits": {"embedding"|"block"|"head": {"F": FIT, "I": FIT, "W": FIT, "B": FIT,
//             "activation_bytes": FIT, "wstash_bytes": FIT, "static_bytes": N,
//             "optimizer_s": s (optional, 0 when absent)}},
//    "samples": [{"kind": "block", "micro_batch_size": 2, "seq_length": 64,
//                 "F": s, "I": s, "W": s, "B": s, "activation_bytes": n,
//                 "wstash_bytes": n, "output_bytes": n}, ...],
//    "layers": [...per-layer costs evaluated at (b0, s0)...]}
//   FIT = {"features": ["tokens", "tokens_x_seq", "one"], "coefficients": [...],
//          "rel_rms_error": e, "max_rel_error": e, "points": n,
//          "tokens_range": [min b*s, max b*s]}   (layer kinds; optional on read)
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/costs.h"
#include "base/status.h"
#include "models/spec/layer_costs.h"
#include "models/spec/profile_samples.h"

namespace pw {

// The shape features a fit may use (FeatureValue), the layer kinds a profile
// measures and the quantities of each kind, in file and message order.
inline const std::vector<std::string> kProfileFeatures = {"tokens", "tokens_x_seq", "one", "bytes"};
inline constexpr const char* kProfileKinds[] = {"embedding", "block", "head"};
inline constexpr const char* kProfileQuantities[] = {"F", "I", "W", "B", "activation_bytes", "wstash_bytes"};

// Features a fitted quantity may depend on, per microbatch of b sequences of
// length s: "tokens" = b*s (GEMMs, elementwise work, most activations),
// "tokens_x_seq" = b*s^2 (attention scores and softmax: Narayanan et al.
// 2021 §5.1, 4 b s^2 h FLOPs per block forward; Korthikanti et al. 2022:
// 5 a s^2 b bytes), "one" = a constant (fixed per-call overhead).
double FeatureValue(const std::string& feature, int64_t b, int64_t s);

// y ~= sum_k coefficients[k] * FeatureValue(features[k], b, s).
struct LinearFit {
  std::vector<std::string> features;
  std::vector<double> coefficients;  // same size as features
  double rel_rms_error = 0;          // sqrt(mean((fit - y)^2 / y^2)) over the points (y > 0)
  double max_rel_error = 0;          // max |fit - y| / y
  int points = 0;
  // Tokens (b*s) of the smallest and largest measured shape, for layer-kind
  // fits ("tokens_range" in the file); 0 = unknown (comm fits, or an old
  // profile without samples).
  int64_t min_tokens = 0;
  int64_t max_tokens = 0;
  // The model at (b, s), not clamped: far from the measured shapes a linear
  // fit can predict <= 0 (ProfileLayerCosts refuses that).
  double Evaluate(int64_t b, int64_t s) const;
  // True if b*s is outside [min_tokens, max_tokens]; false if the range is
  // unknown.
  bool Extrapolates(int64_t b, int64_t s) const;
  // True if every coefficient is 0: the quantity was measured as 0 (then a
  // prediction of 0 is the measurement, not a failed extrapolation).
  bool IsZero() const;
};

// One measured point: y at micro-batch size b and sequence length s.
struct FitPoint {
  int64_t b = 0;
  int64_t s = 0;
  double y = 0;
};

// Least squares on relative residuals (each row weighted by 1/y, so small
// shapes count as much as large ones): minimises sum ((x_i . c - y_i) / y_i)^2
// with Eigen's column-pivoting Householder QR. Points with y <= 0 get weight 1
// (absolute residual). Returns InvalidArgument if there are fewer points than
// features, a feature name is unknown, or the features are collinear on these
// points (rank-deficient design: e.g. one sequence length with tokens_x_seq).
StatusOr<LinearFit> FitLeastSquares(const std::vector<FitPoint>& points, const std::vector<std::string>& features);

// Fitted models of one layer kind.
struct KindFit {
  LinearFit f, i, w, b, activation_bytes, wstash_bytes;
  int64_t static_bytes = 0;  // measured: params + grads + AdamW state (shape-independent)
  // Measured: seconds of one optimizer step over the layer's parameters
  // (gradient zeroing + AdamW step; under TP the partial-gradient sum too).
  // Shape-independent; 0 for profiles written before it was measured.
  double optimizer_s = 0;
};

struct Profile {
  // Where the profile came from, to start error messages ("--profile
  // p.json"); empty for one just fitted.
  std::string source;
  nlohmann::json setup = nlohmann::json::object();  // device, threads, dtype, repetitions (recorded as is)
  nlohmann::json model;                             // GPT config object the samples were measured on
  int64_t element_bytes = 4;                        // activation element size of the measured dtype
  int64_t micro_batch_size = 1;                     // reference shape of the "layers" list
  int64_t seq_length = 1;
  std::vector<ProfileSample> samples;
  std::map<std::string, KindFit> fits;  // by kind
  std::vector<CommSample> comm_samples;
  std::optional<CommModel> comm;      // fitted latency + bytes / bandwidth
  std::optional<LinearFit> comm_fit;  // features {"bytes", "one"} on (b = bytes, s = 1)
  // Tensor-parallel collectives (`pipewright profile` under mpirun -np T):
  // the samples and, per (kind, ranks), the fitted latency + bytes /
  // bandwidth.
  std::vector<CollectiveSample> collective_samples;
  std::vector<CollectiveFit> collective_fits;
};

// Fits every kind present in `samples`: times and activation bytes with
// {"tokens", "tokens_x_seq", "one"} for blocks (attention is quadratic in s)
// and {"tokens", "one"} for the embedding and the head; wstash with
// {"tokens", "one"} (GEMM inputs and output gradients only, ZB paper Table 1:
// linear in tokens). A kind measured at a single sequence length drops
// tokens_x_seq. `static_bytes` and `optimizer_s` by kind are copied in (a
// kind missing from `optimizer_s` gets 0). Comm: one-way time =
// latency + bytes / bandwidth fitted on comm_samples (if any); likewise each
// (kind, ranks) of collective_samples into collective_fits.
// Errors: those of FitLeastSquares, naming the kind and quantity.
Status FitProfile(Profile& profile, const std::map<std::string, int64_t>& static_bytes,
                  const std::map<std::string, double>& optimizer_s = {});
// The collective part of FitProfile alone: collective_fits from
// collective_samples (ParseProfile calls it on the samples it read).
Status FitCollectives(Profile& profile);

// Per-layer costs of `model` (a GPT config object: n_layer, n_embd, ...; the
// layer list embedding, block.0..N-1, head) at micro-batch size b and sequence
// length s, from the profile's fits. output_bytes = b*s*n_embd*element_bytes
// (head: the fp32 loss, 4 bytes). The table records b, s, the comm model and
// `model`. Errors: InvalidArgument if a kind has no fit; if `model`'s width,
// heads, MLP width, vocabulary or positions differ from the profiled model
// (the fits would not apply; only n_layer may differ); or if a fit predicts a
// time or byte count <= 0 at (b, s) (a linear fit extrapolated too far; the
// message starts with profile.source and names the kind, the quantity, the
// shape and the measured tokens range). A fit that is identically 0 (measured
// 0) gives 0.
StatusOr<LayerCostTable> ProfileLayerCosts(const Profile& profile, const nlohmann::json& model, int64_t b, int64_t s);

// One fitted quantity evaluated outside the range of shapes it was measured
// at (its tokens b*s outside [min_tokens, max_tokens]).
struct Extrapolation {
  std::string kind;              // "embedding", "block" or "head"
  std::string quantity;          // "F", "I", "W", "B" (seconds), "activation_bytes" or "wstash_bytes"
  int64_t micro_batch_size = 0;  // requested b
  int64_t seq_length = 0;        // requested s
  int64_t min_tokens = 0;        // measured range of b*s
  int64_t max_tokens = 0;
};

// The quantities of every kind in `profile.fits` that ProfileLayerCosts(b, s)
// would extrapolate, by kind then quantity (F, I, W, B, activation_bytes,
// wstash_bytes). Fits with an unknown range are left out. Never fails.
std::vector<Extrapolation> FindExtrapolations(const Profile& profile, int64_t b, int64_t s);

// Warning lines (no trailing newline) for `found` (any number of shapes), one
// per kind and measured range: "--profile p.json: block F time, I time, ...
// extrapolated to micro-batch size x seq length 8x2048 (16384 tokens), outside
// the measured 16..256 tokens: ...". Each line starts with `source` (if not
// empty).
std::vector<std::string> FormatExtrapolationWarnings(const std::vector<Extrapolation>& found,
                                                     const std::string& source);

// The profile document (format above), with "layers" evaluated at the
// reference shape.
StatusOr<nlohmann::json> ProfileToJson(const Profile& profile);
// Parses a profile document; `source` becomes Profile::source. A fit without
// "tokens_range" gets the range of its kind's samples (if any). InvalidArgument
// names the field ("profile.json: fits.block.F.coefficients must be a list of
// 3 numbers").
StatusOr<Profile> ParseProfile(const nlohmann::json& j, const std::string& source);
// True if `j` has "format": "pipewright-profile" and "fits".
bool IsProfileDocument(const nlohmann::json& j);

// A plain-text table of every fit: kind, quantity, coefficients, errors.
std::string FormatProfileFits(const Profile& profile);

}  // namespace pw
