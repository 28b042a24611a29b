// Least-squares fits of a measured quantity as a linear function of the
// shape features (profile_fit.h: FeatureValue, LinearFit, FitLeastSquares).
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "planner/profile_fit.h"

namespace pw {

namespace {}  // namespace

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
    if (std::find(kProfileFeatures.begin(), kProfileFeatures.end(), f) == kProfileFeatures.end())
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

}  // namespace pw
