#include "hostnet/reserved_ports.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace hostport::hostnet {
namespace {

namespace fs = std::filesystem;
using Ranges = std::vector<PortRange>;

Ranges parsed(std::string_view text) {
  auto result = parseReservedPorts(text);
  EXPECT_TRUE(result) << "\"" << text << "\": " << (result ? "" : result.error().message);
  return result ? *result : Ranges{};
}

// --- Parsing

TEST(ReservedPortsTest, ParsesEmptyAndBlankAsNothingReserved) {
  EXPECT_EQ(parsed(""), Ranges{});
  EXPECT_EQ(parsed("\n"), Ranges{});
  EXPECT_EQ(parsed("  \t \n"), Ranges{});
}

TEST(ReservedPortsTest, ParsesTheKernelsOwnFormat) {
  EXPECT_EQ(parsed("8080"), (Ranges{{8080, 8080}}));
  EXPECT_EQ(parsed("8080,30000-32767\n"), (Ranges{{8080, 8080}, {30000, 32767}}));
  EXPECT_EQ(parsed("0,65535"), (Ranges{{0, 0}, {65535, 65535}}));
  EXPECT_EQ(parsed("0-65535\n"), (Ranges{{0, 65535}}));
  EXPECT_EQ(parsed("7-7"), (Ranges{{7, 7}}));
}

TEST(ReservedPortsTest, AcceptsBlanksAroundItemsAndKeepsTheWrittenOrder) {
  EXPECT_EQ(parsed(" 30000-32767 ,\t8080 \n"), (Ranges{{30000, 32767}, {8080, 8080}}));
  EXPECT_EQ(parsed("00080"), (Ranges{{80, 80}})) << "leading zeros, as the kernel's strtoul";
}

TEST(ReservedPortsTest, RejectsHostileText) {
  const std::vector<std::string_view> hostile = {",",
                                                 "8080,",
                                                 ",8080",
                                                 "1,,2",
                                                 "65536",
                                                 "99999999999999999999999",
                                                 "-1",
                                                 "+5",
                                                 "1-",
                                                 "-5",
                                                 "-",
                                                 "5-1",
                                                 "1-2-3",
                                                 "1--2",
                                                 "abc",
                                                 "80 80",
                                                 "1\n,2",
                                                 "1\n2",
                                                 "0x10",
                                                 "1e3",
                                                 "1.5",
                                                 "1;2",
                                                 "1 - 2",
                                                 "\xff",
                                                 std::string_view("1\0,2", 4),
                                                 "8080\r\n"};
  for (const std::string_view text : hostile) {
    const auto result = parseReservedPorts(text);
    EXPECT_FALSE(result) << "\"" << text << "\" was accepted";
    if (!result) {
      EXPECT_EQ(result.error().code, ErrorCode::kDecode);
    }
  }
}

TEST(ReservedPortsTest, RejectsTextLongerThanTheKernelCouldWrite) {
  std::string huge(1 << 20, '1');
  huge.append(",1");
  EXPECT_FALSE(parseReservedPorts(huge));
}

TEST(ReservedPortsTest, ErrorMessagesShowOnlyPrintableExcerpts) {
  const auto result = parseReservedPorts("1,\x1b[2J" + std::string(100, '9'));
  ASSERT_FALSE(result);
  for (const char c : result.error().message) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << int(static_cast<unsigned char>(c));
  }
  EXPECT_LT(result.error().message.size(), 120u);
}

TEST(ReservedPortsTest, ParserSurvivesRandomText) {
  std::mt19937 random(1234);  // fixed seed: failures must reproduce
  const std::string alphabet = "0123456789,- \t\n+x";
  for (int round = 0; round < 20000; ++round) {
    std::string text(random() % 24, ' ');
    for (char& c : text) c = alphabet[random() % alphabet.size()];
    const auto result = parseReservedPorts(text);
    if (!result) continue;
    for (const PortRange& range : *result) EXPECT_LE(range.first, range.second) << text;
    // Whatever parses must survive a format/parse round trip as the same set.
    const auto again = parseReservedPorts(formatReservedPorts(normalizePortRanges(*result)));
    ASSERT_TRUE(again) << text;
    EXPECT_EQ(normalizePortRanges(*again), normalizePortRanges(*result)) << text;
  }
}

// --- Normalising, merging, formatting

TEST(ReservedPortsTest, NormalisesOverlappingAdjacentAndContainedRanges) {
  EXPECT_EQ(normalizePortRanges({}), Ranges{});
  EXPECT_EQ(normalizePortRanges({{30, 40}, {1, 5}, {35, 50}}), (Ranges{{1, 5}, {30, 50}}));
  EXPECT_EQ(normalizePortRanges({{1, 5}, {6, 9}}), (Ranges{{1, 9}})) << "adjacent";
  EXPECT_EQ(normalizePortRanges({{1, 5}, {7, 9}}), (Ranges{{1, 5}, {7, 9}})) << "a gap of one";
  EXPECT_EQ(normalizePortRanges({{1, 100}, {20, 30}, {50, 50}}), (Ranges{{1, 100}}));
  EXPECT_EQ(normalizePortRanges({{8, 8}, {8, 8}, {9, 9}}), (Ranges{{8, 9}}));
  EXPECT_EQ(normalizePortRanges({{65535, 65535}, {0, 0}, {65534, 65535}}),
            (Ranges{{0, 0}, {65534, 65535}}));
  EXPECT_EQ(normalizePortRanges({{0, 65535}, {65535, 65535}}), (Ranges{{0, 65535}}));
  EXPECT_EQ(normalizePortRanges({{9, 3}, {1, 2}}), (Ranges{{1, 2}})) << "reversed is dropped";
}

TEST(ReservedPortsTest, MergeAddsToWhatIsThereAndNeverRemoves) {
  const Ranges existing = parsed("8080,30000-31000");
  EXPECT_EQ(mergePortRanges(existing, {{31001, 32767}}), (Ranges{{8080, 8080}, {30000, 32767}}));
  EXPECT_EQ(mergePortRanges(existing, {}), (Ranges{{8080, 8080}, {30000, 31000}}));
  EXPECT_EQ(mergePortRanges({}, {{40000, 40010}}), (Ranges{{40000, 40010}}));
  const Ranges once = mergePortRanges(existing, {{20000, 20000}, {30500, 35000}});
  EXPECT_EQ(once, (Ranges{{8080, 8080}, {20000, 20000}, {30000, 35000}}));
  EXPECT_EQ(mergePortRanges(once, {{20000, 20000}, {30500, 35000}}), once) << "idempotent";
}

TEST(ReservedPortsTest, FormatsLikeTheKernel) {
  EXPECT_EQ(formatReservedPorts({}), "");
  EXPECT_EQ(formatReservedPorts({{8080, 8080}}), "8080");
  EXPECT_EQ(formatReservedPorts({{8080, 8080}, {30000, 32767}}), "8080,30000-32767");
  EXPECT_EQ(formatReservedPorts({{0, 65535}}), "0-65535");
  const Ranges sample = {{1, 1}, {3, 9}, {65535, 65535}};
  EXPECT_EQ(parsed(formatReservedPorts(sample)), sample);
}

// --- reserveLocalPorts on a plain file standing in for the sysctl

class ReserveLocalPortsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()) << "no temp dir"; }
  void write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }
  std::string read() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  test::TempDir dir_;
  std::string path_ = (dir_ / "ip_local_reserved_ports").string();
};

TEST_F(ReserveLocalPortsTest, MergesWithWhatIsAlreadyReserved) {
  write("8080,30000-30010\n");
  auto result = reserveLocalPorts({{30005, 30020}, {40000, 40000}}, path_);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(read(), "8080,30000-30020,40000\n");
}

TEST_F(ReserveLocalPortsTest, WritesNothingWhenTheRangesAreAlreadyReserved) {
  // The same set in a form we would never write: if it is still there afterwards, nothing was.
  write(" 30000-30005 , 30006-30010,8080\n");
  ASSERT_TRUE(reserveLocalPorts({{30002, 30009}, {8080, 8080}}, path_));
  EXPECT_EQ(read(), " 30000-30005 , 30006-30010,8080\n");
  ASSERT_TRUE(reserveLocalPorts({}, path_));
  EXPECT_EQ(read(), " 30000-30005 , 30006-30010,8080\n");
}

TEST_F(ReserveLocalPortsTest, IsIdempotent) {
  write("");
  ASSERT_TRUE(reserveLocalPorts({{30000, 32767}}, path_));
  EXPECT_EQ(read(), "30000-32767\n");
  ASSERT_TRUE(reserveLocalPorts({{30000, 32767}}, path_));
  EXPECT_EQ(read(), "30000-32767\n");
}

TEST_F(ReserveLocalPortsTest, RefusesReversedRangesWithoutTouchingTheFile) {
  write("8080\n");
  const auto result = reserveLocalPorts({{10, 20}, {40, 30}}, path_);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(read(), "8080\n");
}

TEST_F(ReserveLocalPortsTest, RefusesToOverwriteTextItCannotParse) {
  write("8080,garbage\n");
  const auto result = reserveLocalPorts({{30000, 30001}}, path_);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kDecode);
  EXPECT_NE(result.error().message.find(path_), std::string::npos);
  EXPECT_EQ(read(), "8080,garbage\n");
}

TEST_F(ReserveLocalPortsTest, MissingSysctlIsAKernelErrorAndIsNotCreated) {
  const auto result = reserveLocalPorts({{30000, 30001}}, path_);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kKernel);
  EXPECT_NE(result.error().message.find("30000-30001"), std::string::npos) << "says what was asked";
  EXPECT_NE(result.error().message.find("No such file"), std::string::npos) << "says why";
  EXPECT_FALSE(fs::exists(path_));
}

}  // namespace
}  // namespace hostport::hostnet
