#include "agent/core/request_scratch.h"

#include <gtest/gtest.h>

namespace hostport::agent::core {
namespace {

TEST(RequestScratchTest, SetsPortsAsideInItsBitmap) {
  RequestScratch scratch;
  scratch.exclude(80);
  scratch.exclude(65535);
  scratch.exclude(80);  // twice is once
  EXPECT_TRUE(scratch.excluded(80));
  EXPECT_TRUE(scratch.excluded(65535));
  EXPECT_FALSE(scratch.excluded(81));
  EXPECT_TRUE(scratch.bitmap().test(80));
  EXPECT_FALSE(scratch.bitmap().test(0));
}

TEST(RequestScratchTest, ClearsEveryPortSetAside) {
  RequestScratch scratch;
  for (uint32_t port = 30000; port < 30100; ++port) scratch.exclude(static_cast<uint16_t>(port));
  scratch.clear();
  for (std::size_t word = 0; word < kPortSpace / 64; ++word) {
    ASSERT_EQ(scratch.bitmap().word(word), 0u) << word;
  }
  scratch.exclude(30000);  // usable again
  EXPECT_TRUE(scratch.excluded(30000));
}

TEST(RequestScratchTest, AScopeClearsTheScratchOnEveryExit) {
  RequestScratch scratch;
  const auto refused = [&]() -> bool {
    const RequestScratch::Scope scope(scratch);
    scratch.exclude(1234);
    if (scratch.excluded(1234)) return false;  // an early exit
    return true;
  };
  EXPECT_FALSE(refused());
  EXPECT_FALSE(scratch.excluded(1234));
  {
    const RequestScratch::Scope scope(scratch);
    scratch.exclude(4321);
    EXPECT_TRUE(scratch.excluded(4321));
  }
  EXPECT_FALSE(scratch.excluded(4321));
}

}  // namespace
}  // namespace hostport::agent::core
