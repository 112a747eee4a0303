#include "common/prometheus_text.h"

#include <array>
#include <charconv>
#include <cmath>

namespace hostport::prometheus {

namespace {

std::string_view typeName(Type type) {
  switch (type) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
    case Type::kSummary:
      return "summary";
  }
  return "untyped";
}

}  // namespace

std::string escapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string formatNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  std::array<char, 32> buffer{};
  // general, not the default's shortest of fixed and scientific: 0.0001 stays "0.0001", as
  // dashboards and alert rules spell bucket bounds.
  const auto written = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                     std::chars_format::general);
  return {buffer.data(), written.ptr};
}

void TextWriter::family(std::string_view name, Type type, std::string_view help) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  text_ += help;
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += typeName(type);
  text_ += '\n';
}

void TextWriter::sample(std::string_view name, uint64_t value, Labels labels) {
  line(name, labels, std::to_string(value));
}

void TextWriter::sample(std::string_view name, double value, Labels labels) {
  line(name, labels, formatNumber(value));
}

void TextWriter::line(std::string_view name, Labels labels, std::string_view value) {
  text_ += name;
  if (labels.size() > 0) {
    char separator = '{';
    for (const auto& [label, labelValue] : labels) {
      text_ += separator;
      text_ += label;
      text_ += "=\"";
      text_ += escapeLabelValue(labelValue);
      text_ += '"';
      separator = ',';
    }
    text_ += '}';
  }
  text_ += ' ';
  text_ += value;
  text_ += '\n';
}

}  // namespace hostport::prometheus
