#include "common/id_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace hostport {
namespace {

// Keys are ids' own numbers here; `hashOf` decides how badly they collide.
class IdIndexTest : public ::testing::Test {
 protected:
  template <typename HashOf>
  void runAgainstAModel(HashOf hashOf, uint32_t keySpace, int steps, uint32_t seed) {
    IdIndex index;
    std::map<uint32_t, bool> model;  // the ids present
    std::mt19937 rng(seed);
    const auto matches = [](uint32_t wanted) {
      return [wanted](uint32_t id) { return id == wanted; };
    };
    for (int step = 0; step < steps; ++step) {
      const uint32_t id = rng() % keySpace;
      const uint64_t hash = hashOf(id);
      const bool present = model.contains(id);
      switch (rng() % 3) {
        case 0:
          if (!present) {
            index.insert(id, hash);
            model[id] = true;
          }
          break;
        case 1:
          ASSERT_EQ(index.erase(hash, matches(id)), present) << "step " << step;
          model.erase(id);
          break;
        default:
          ASSERT_EQ(index.find(hash, matches(id)), present ? std::optional(id) : std::nullopt)
              << "step " << step;
      }
      ASSERT_EQ(index.size(), model.size());
    }
    // Every id still present is found, every other one is not.
    for (uint32_t id = 0; id < keySpace; ++id) {
      EXPECT_EQ(index.find(hashOf(id), matches(id)).has_value(), model.contains(id)) << id;
    }
  }
};

TEST_F(IdIndexTest, AgreesWithAModelUnderWellSpreadHashes) {
  runAgainstAModel([](uint32_t id) { return std::hash<uint64_t>{}(id)*0x9e3779b97f4a7c15ULL; },
                   3000, 30000, 1);
}

TEST_F(IdIndexTest, AgreesWithAModelWhenHashesCollideInLongRuns) {
  // Eight home buckets for everything: long runs that wrap around the end of the table, and
  // erasures in their middle that must pull later entries back.
  runAgainstAModel([](uint32_t id) { return uint64_t{id % 8} * 0x1000 + 0xfffffff8; }, 500, 20000,
                   2);
}

TEST_F(IdIndexTest, AgreesWithAModelWhenEveryHashIsTheSame) {
  runAgainstAModel([](uint32_t) { return uint64_t{42}; }, 200, 5000, 3);
}

TEST_F(IdIndexTest, KeepsIdsAcrossGrowthAndReserve) {
  IdIndex index;
  EXPECT_FALSE(index.find(1, [](uint32_t) { return true; }));
  EXPECT_FALSE(index.erase(1, [](uint32_t) { return true; }));
  index.reserve(10);
  for (uint32_t id = 0; id < 10000; ++id) index.insert(id, uint64_t{id} * 2654435761u);
  index.reserve(50000);
  EXPECT_EQ(index.size(), 10000u);
  for (uint32_t id = 0; id < 10000; ++id) {
    ASSERT_EQ(index.find(uint64_t{id} * 2654435761u, [id](uint32_t other) { return other == id; }),
              id);
  }
}

TEST_F(IdIndexTest, TellsApartIdsWithTheSameHashByTheirKeys) {
  IdIndex index;
  index.insert(1, 7);
  index.insert(2, 7);
  EXPECT_EQ(index.find(7, [](uint32_t id) { return id == 2; }), 2u);
  EXPECT_TRUE(index.erase(7, [](uint32_t id) { return id == 1; }));
  EXPECT_EQ(index.find(7, [](uint32_t id) { return id == 2; }), 2u);
  EXPECT_FALSE(index.find(7, [](uint32_t id) { return id == 1; }));
}

}  // namespace
}  // namespace hostport
