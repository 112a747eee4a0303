#include "agent/core/string_table.h"

#include <gtest/gtest.h>

#include <string>

namespace hostport::agent::core {
namespace {

TEST(StringTableTest, GivesTheSameIdToTheSameTextAndCountsReferences) {
  StringTable table;
  const uint32_t a = table.intern("default");
  const uint32_t b = table.intern("kube-system");
  EXPECT_NE(a, b);
  EXPECT_EQ(table.intern("default"), a);
  EXPECT_EQ(table.text(a), "default");
  EXPECT_EQ(table.text(b), "kube-system");
  EXPECT_EQ(table.size(), 2u);

  table.release(a);  // one of two references
  EXPECT_EQ(table.text(a), "default");
  table.release(a);
  table.release(b);
  EXPECT_EQ(table.size(), 0u);
}

TEST(StringTableTest, NeverStoresTheEmptyText) {
  StringTable table;
  EXPECT_EQ(table.intern(""), StringTable::kEmpty);
  EXPECT_EQ(table.text(StringTable::kEmpty), "");
  table.release(StringTable::kEmpty);
  EXPECT_EQ(table.size(), 0u);
}

TEST(StringTableTest, ReusesTheIdOfADroppedEntryForNewText) {
  StringTable table;
  const uint32_t first = table.intern("/var/run/netns/cni-");
  table.release(first);
  EXPECT_EQ(table.intern("/proc/1/ns/"), first);
  EXPECT_EQ(table.text(first), "/proc/1/ns/");
  // The dropped text is not found any more: interning it again makes a new entry.
  const uint32_t again = table.intern("/var/run/netns/cni-");
  EXPECT_NE(again, first);
  EXPECT_EQ(table.text(again), "/var/run/netns/cni-");
  EXPECT_EQ(table.size(), 2u);
}

TEST(StringTableTest, KeepsManyEntriesApartIncludingLongAndBinaryText) {
  StringTable table;
  std::vector<uint32_t> ids;
  for (int i = 0; i < 5000; ++i) {
    ids.push_back(
        table.intern(std::string(i % 300, 'x') + std::string(1, '\0') + std::to_string(i)));
  }
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(table.text(ids[i]),
              std::string(i % 300, 'x') + std::string(1, '\0') + std::to_string(i));
  }
  for (int i = 0; i < 5000; i += 2) table.release(ids[i]);
  EXPECT_EQ(table.size(), 2500u);
  for (int i = 1; i < 5000; i += 2) {
    ASSERT_EQ(table.intern(std::string(i % 300, 'x') + std::string(1, '\0') + std::to_string(i)),
              ids[i]);
  }
}

}  // namespace
}  // namespace hostport::agent::core
