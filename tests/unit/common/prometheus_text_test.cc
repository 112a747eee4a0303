// The one writer of the Prometheus text format (common/prometheus_text.h), and the duration
// histogram written with it (common/duration_histogram.h).

#include "common/prometheus_text.h"

#include <gtest/gtest.h>

#include <limits>

#include "common/duration_histogram.h"

namespace hostport::prometheus {
namespace {

TEST(PrometheusTextTest, AFamilyIsItsHelpAndTypeThenItsSamples) {
  TextWriter out;
  out.family("hostport_leases", Type::kGauge, "Attachments holding a lease.");
  out.sample("hostport_leases", uint64_t{3});
  out.family("hostport_errors_total", Type::kCounter, "Requests that failed, by error code.");
  out.sample("hostport_errors_total", uint64_t{2}, {{"code", "conflict"}});
  out.sample("hostport_errors_total", uint64_t{1}, {{"pool", "games"}, {"code", "exhausted"}});
  EXPECT_EQ(out.text(),
            "# HELP hostport_leases Attachments holding a lease.\n"
            "# TYPE hostport_leases gauge\n"
            "hostport_leases 3\n"
            "# HELP hostport_errors_total Requests that failed, by error code.\n"
            "# TYPE hostport_errors_total counter\n"
            "hostport_errors_total{code=\"conflict\"} 2\n"
            "hostport_errors_total{pool=\"games\",code=\"exhausted\"} 1\n");
}

TEST(PrometheusTextTest, EscapesBackslashQuoteAndNewlineInLabelValues) {
  TextWriter out;
  out.sample("m", uint64_t{1}, {{"reason", "a\\b\"c\nd"}});
  EXPECT_EQ(out.text(), "m{reason=\"a\\\\b\\\"c\\nd\"} 1\n");
  EXPECT_EQ(escapeLabelValue("plain-value_1.2"), "plain-value_1.2");
}

TEST(PrometheusTextTest, NumbersAreShortAndReadBackExactly) {
  EXPECT_EQ(formatNumber(0.0001), "0.0001");
  EXPECT_EQ(formatNumber(0.00025), "0.00025");
  EXPECT_EQ(formatNumber(1.0), "1");
  EXPECT_EQ(formatNumber(0.123456789), "0.123456789");
  EXPECT_EQ(formatNumber(1.5e-07), "1.5e-07");
  EXPECT_EQ(formatNumber(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(formatNumber(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(formatNumber(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(PrometheusTextTest, TypesAreSpelledAsTheFormatSays) {
  TextWriter out;
  out.family("a", Type::kHistogram, "h");
  out.family("b", Type::kSummary, "s");
  EXPECT_EQ(out.text(), "# HELP a h\n# TYPE a histogram\n# HELP b s\n# TYPE b summary\n");
}

TEST(DurationHistogramTest, CountsEachObservationInEveryBucketItFitsWithItsSumAndCount) {
  DurationHistogram<2> histogram({0.001, 0.01});
  histogram.observe(std::chrono::microseconds(500));
  histogram.observe(std::chrono::milliseconds(1));  // on a bound: le means at most
  histogram.observe(std::chrono::milliseconds(20));
  TextWriter plain;
  histogram.write(plain, "x_seconds");
  EXPECT_EQ(plain.text(),
            "x_seconds_bucket{le=\"0.001\"} 2\n"
            "x_seconds_bucket{le=\"0.01\"} 2\n"
            "x_seconds_bucket{le=\"+Inf\"} 3\n"
            "x_seconds_sum 0.0215\n"
            "x_seconds_count 3\n");
  TextWriter labelled;
  histogram.write(labelled, "x_seconds", {{"webhook", "validate"}});
  EXPECT_NE(labelled.text().find("x_seconds_bucket{webhook=\"validate\",le=\"+Inf\"} 3\n"),
            std::string::npos)
      << labelled.text();
  EXPECT_NE(labelled.text().find("x_seconds_count{webhook=\"validate\"} 3\n"), std::string::npos)
      << labelled.text();
}

}  // namespace
}  // namespace hostport::prometheus
