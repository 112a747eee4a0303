#pragma once
// The Prometheus text exposition format (version 0.0.4), written one way for every family the
// agent exposes: HELP and TYPE before a family's samples, label values escaped, numbers in the
// shortest form that reads back to the same double.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace hostport::prometheus {

enum class Type { kCounter, kGauge, kHistogram, kSummary };

using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

class TextWriter {
 public:
  /// Starts a family: its # HELP and # TYPE lines. Its samples follow.
  void family(std::string_view name, Type type, std::string_view help);
  /// One sample line: `name{label="value",...} value`. `name` may carry a suffix of the family's
  /// (_bucket, _sum, _count).
  void sample(std::string_view name, uint64_t value, Labels labels = {});
  void sample(std::string_view name, double value, Labels labels = {});

  const std::string& text() const { return text_; }

 private:
  void line(std::string_view name, Labels labels, std::string_view value);

  std::string text_;
};

/// `value` as a label value is written: backslash, double quote and newline escaped.
std::string escapeLabelValue(std::string_view value);

/// `value` as a sample or an `le` label is written: the shortest text that parses back to it
/// ("0.0005", "1", "1.5e-07"), and +Inf, -Inf, NaN as Prometheus spells them.
std::string formatNumber(double value);

}  // namespace hostport::prometheus
