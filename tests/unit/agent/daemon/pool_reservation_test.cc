// Reserving the pools' ports at start (agent/daemon/pool_reservation.h), on a plain file in place
// of the sysctl.

#include "agent/daemon/pool_reservation.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/log_capture.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::daemon {
namespace {

class PoolReservationTest : public ::testing::Test {
 protected:
  void write(const std::string& text) { std::ofstream(path()) << text; }
  std::string read() const {
    std::ifstream in(path());
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string path() const { return (dir_ / "ip_local_reserved_ports").string(); }

  test::TempDir dir_;
};

TEST_F(PoolReservationTest, AddsEveryPoolRangeToWhatIsReservedAndLogsThem) {
  write("8080\n");
  log::testing::LogCapture capture(log::Level::kInfo);
  const std::vector<core::PoolSpec> pools = {
      {"default", {{30000, 30099}, {30100, 30199}}, {}, core::Strategy::kLowest},
      {"games", {{9000, 9000}}, {}, core::Strategy::kLowest}};
  ASSERT_TRUE(reservePoolPorts(pools, path()));
  EXPECT_EQ(read(), "8080,9000,30000-30199\n");
  EXPECT_EQ(
      capture.events("socket.ports_reserved"),
      std::vector<std::string>{"socket.ports_reserved ranges=9000,30000-30199 path=" + path()});
}

TEST_F(PoolReservationTest, FailsWithoutLoggingWhenTheListCannotBeRead) {
  write("not a list");
  log::testing::LogCapture capture(log::Level::kInfo);
  const auto reserved =
      reservePoolPorts({{"default", {{30000, 30001}}, {}, core::Strategy::kLowest}}, path());
  ASSERT_FALSE(reserved);
  EXPECT_EQ(reserved.error().code, ErrorCode::kDecode);
  EXPECT_TRUE(capture.events("socket.ports_reserved").empty());
}

}  // namespace
}  // namespace hostport::agent::daemon
