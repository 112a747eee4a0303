#include "agent/store/lease_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "agent/store/snapshot.h"
#include "store_test_util.h"
#include "tests/fakes/faulty_file_ops.h"
#include "tests/support/live_journal_damage.h"
#include "tests/support/result_assertions.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::store {
namespace {

using test::TempDir;
using testing::readText;
using testing::sampleLease;
using testing::writeFile;
using Op = FaultyFileOps::Op;

JournalRecord grant(int i) { return {JournalRecord::Kind::kGrant, sampleLease(i)}; }
JournalRecord release(int i) {
  JournalRecord record{JournalRecord::Kind::kRelease, {}};
  record.lease.key = sampleLease(i).key;
  return record;
}

/// Collects `done` results from the committer thread and lets the test wait for them.
class Completions {
 public:
  std::function<void(Result<void>)> callback(int id) {
    return [this, id](Result<void> result) {
      std::lock_guard guard(mu_);
      results_.emplace_back(id, std::move(result));
      changed_.notify_all();
    };
  }
  std::vector<std::pair<int, Result<void>>> waitFor(size_t count) {
    std::unique_lock lock(mu_);
    const bool done =
        changed_.wait_for(lock, std::chrono::seconds(30), [&] { return results_.size() >= count; });
    EXPECT_TRUE(done) << "only " << results_.size() << " of " << count << " callbacks came";
    return results_;
  }
  size_t size() {
    std::lock_guard guard(mu_);
    return results_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::pair<int, Result<void>>> results_;
};

Result<void> submitAndWait(LeaseStore& store, JournalRecord record) {
  std::promise<Result<void>> promise;
  auto future = promise.get_future();
  store.submit(std::move(record), [&](Result<void> result) { promise.set_value(result); });
  return future.get();
}

Result<void> compactAndWait(LeaseStore& store, std::vector<Lease> leases) {
  std::promise<Result<void>> promise;
  auto future = promise.get_future();
  store.submitCompaction(std::move(leases), [&](Result<void> r) { promise.set_value(r); });
  return future.get();
}

std::set<std::string> keysOf(const std::vector<Lease>& leases) {
  std::set<std::string> keys;
  for (const Lease& lease : leases) keys.insert(lease.key.str());
  return keys;
}

class LeaseStoreTest : public ::testing::Test {
 protected:
  std::filesystem::path stateDir() const { return dir_ / "state"; }

  std::unique_ptr<LeaseStore> openStore(std::shared_ptr<FileOps> fs = nullptr) {
    StoreOptions options;
    options.fileOps = std::move(fs);
    auto store = LeaseStore::open(stateDir(), std::move(options));
    EXPECT_OK(store);
    return store ? std::move(*store) : nullptr;
  }

  /// Opens with the real syscalls and recovers, as the next agent start would.
  std::vector<Lease> reopenAndRecover(LeaseStore** out = nullptr) {
    reopened_ = openStore();
    if (!reopened_) return {};
    auto leases = reopened_->recover();
    EXPECT_OK(leases);
    if (out != nullptr) *out = reopened_.get();
    return leases.value_or(std::vector<Lease>{});
  }

  TempDir dir_;
  std::unique_ptr<LeaseStore> reopened_;
};

TEST_F(LeaseStoreTest, CreatesAPrivateStateDirectoryAndStartsEmpty) {
  auto store = openStore();
  ASSERT_NE(store, nullptr);
  auto leases = store->recover();
  ASSERT_OK(leases);
  EXPECT_TRUE(leases->empty());
  struct stat st {};
  ASSERT_EQ(::stat(stateDir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(readText(stateDir() / "journal.0"), journalHeader(0));
  // The first snapshot names journal.0, so from now on it cannot go missing or short unnoticed.
  EXPECT_EQ(readText(stateDir() / "snapshot"), encodeSnapshot(0, {}).value());
  EXPECT_FALSE(std::filesystem::exists(stateDir() / "snapshot.tmp"));
  EXPECT_EQ(readText(stateDir() / "lock"), std::to_string(::getpid()) + "\n");
  EXPECT_EQ(store->stats().recovery.generation, 0u);
}

TEST_F(LeaseStoreTest, SecondOpenOfTheSameDirectoryFailsWithUnavailable) {
  auto first = openStore();
  ASSERT_NE(first, nullptr);
  auto second = LeaseStore::open(stateDir());
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(second.error().message.find(stateDir().string()), std::string::npos);
  EXPECT_NE(second.error().message.find("pid " + std::to_string(::getpid())), std::string::npos);
  first.reset();  // the lock goes with the store
  EXPECT_TRUE(LeaseStore::open(stateDir()).has_value());
}

TEST_F(LeaseStoreTest, RecoversGrantsAndReleasesSortedByKeyWithTheLastGrantWinning) {
  {
    auto store = openStore();
    ASSERT_TRUE(store->recover().has_value());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(submitAndWait(*store, grant(i)).has_value());
    ASSERT_TRUE(submitAndWait(*store, release(3)).has_value());
    ASSERT_TRUE(submitAndWait(*store, release(77)).has_value());  // never granted
    JournalRecord replaced = grant(5);
    replaced.lease.netns = "/var/run/netns/replaced";
    ASSERT_TRUE(submitAndWait(*store, replaced).has_value());
    EXPECT_GT(store->journalBytes(), 0u);
  }
  LeaseStore* store = nullptr;
  const auto leases = reopenAndRecover(&store);
  ASSERT_EQ(leases.size(), 9u);
  EXPECT_TRUE(std::is_sorted(leases.begin(), leases.end(),
                             [](const Lease& a, const Lease& b) { return a.key < b.key; }));
  EXPECT_FALSE(keysOf(leases).contains(sampleLease(3).key.str()));
  for (const Lease& lease : leases) {
    if (lease.key == sampleLease(5).key) {
      EXPECT_EQ(lease.netns, "/var/run/netns/replaced");
    } else {
      EXPECT_EQ(lease, sampleLease(std::stoi(lease.pod.name.substr(4))));
    }
  }
  const auto recovery = store->stats().recovery;
  EXPECT_EQ(recovery.recordsReplayed, 13u);
  EXPECT_EQ(recovery.releasesOfUnknownKeys, 1u);
  EXPECT_FALSE(recovery.tornTailDropped);
}

TEST_F(LeaseStoreTest, RecoversSnapshotAndJournalSortedByKeyWhateverTheOrderWritten) {
  // Keys alike far beyond their first 8 bytes, one a prefix of another, written shuffled; the
  // snapshot holds keys more than once (the later lease wins, as in the journal); the journal
  // then releases, replaces and adds.
  std::mt19937 rng(11);
  std::map<AttachmentKey, Lease> model;
  std::vector<Lease> snapshot;
  for (int i = 0; i < 400; ++i) {
    Lease lease = sampleLease(i);
    lease.key.containerId =
        (i % 3 == 0 ? "0123456789abcdef" : "0123456789abcdef0") + std::to_string(i % 41);
    lease.key.ifname = "eth" + std::to_string(i % 2);
    snapshot.push_back(std::move(lease));
  }
  std::shuffle(snapshot.begin(), snapshot.end(), rng);
  for (const Lease& lease : snapshot) model[lease.key] = lease;
  ASSERT_LT(model.size(), snapshot.size());
  {
    auto store = openStore();
    ASSERT_TRUE(store->recover().has_value());
    ASSERT_TRUE(compactAndWait(*store, snapshot).has_value());
    int n = 0;
    std::vector<AttachmentKey> keys;
    for (const auto& [key, lease] : model) keys.push_back(key);
    std::shuffle(keys.begin(), keys.end(), rng);
    for (const AttachmentKey& key : keys) {
      JournalRecord record{JournalRecord::Kind::kGrant, model[key]};
      if (n % 3 == 0) {
        record.kind = JournalRecord::Kind::kRelease;
        model.erase(key);
      } else if (n % 3 == 1) {
        record.lease.netns = "/var/run/netns/replaced-" + std::to_string(n);
        model[key] = record.lease;
      } else {
        record.lease.key.containerId += "-new";
        model[record.lease.key] = record.lease;
      }
      ++n;
      ASSERT_TRUE(submitAndWait(*store, record).has_value());
    }
  }
  std::vector<Lease> expected;
  for (const auto& [key, lease] : model) expected.push_back(lease);
  EXPECT_EQ(reopenAndRecover(), expected);
}

TEST_F(LeaseStoreTest, GroupCommitsConcurrentSubmittersInSubmissionOrder) {
  auto fs = std::make_shared<FaultyFileOps>();
  fs->setSyncDelay(std::chrono::milliseconds(2));  // a slow disk, so submitters pile up
  auto store = openStore(fs);
  ASSERT_TRUE(store->recover().has_value());

  constexpr int kThreads = 16;
  constexpr int kPerThread = 100;
  constexpr int kTotal = kThreads * kPerThread;
  Completions completions;
  std::mutex submitMu;  // the caller's lock that fixes the submission order
  int next = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        std::lock_guard guard(submitMu);
        const int id = next++;
        store->submit(grant(id), completions.callback(id));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto results = completions.waitFor(kTotal);
  ASSERT_EQ(results.size(), static_cast<size_t>(kTotal));
  for (int i = 0; i < kTotal; ++i) {
    EXPECT_EQ(results[i].first, i);  // each `done` exactly once, in submission order
    EXPECT_TRUE(results[i].second.has_value());
  }
  const StoreStats stats = store->stats();
  EXPECT_EQ(stats.records, static_cast<uint64_t>(kTotal));
  EXPECT_LT(stats.fsyncs, static_cast<uint64_t>(kTotal));
  EXPECT_EQ(stats.fsyncs, stats.batches);
  EXPECT_GT(stats.maxBatchRecords, 1u);
  EXPECT_EQ(stats.bytes, store->journalBytes());
  EXPECT_EQ(fs->calls(Op::kFdatasync), static_cast<int>(stats.fsyncs));

  store.reset();
  EXPECT_EQ(reopenAndRecover().size(), static_cast<size_t>(kTotal));
}

TEST_F(LeaseStoreTest, DestructorAnswersEverythingStillQueued) {
  Completions completions;
  {
    auto store = openStore();
    ASSERT_TRUE(store->recover().has_value());
    for (int i = 0; i < 500; ++i) store->submit(grant(i), completions.callback(i));
  }
  const auto results = completions.waitFor(500);
  ASSERT_EQ(results.size(), 500u);
  EXPECT_TRUE(std::all_of(results.begin(), results.end(),
                          [](const auto& r) { return r.second.has_value(); }));
  EXPECT_EQ(reopenAndRecover().size(), 500u);
}

TEST_F(LeaseStoreTest, RecordsSubmittedBeforeRecoverWaitForIt) {
  Completions completions;
  {
    auto store = openStore();
    store->submit(grant(1), completions.callback(1));
    EXPECT_EQ(completions.size(), 0u);
    ASSERT_TRUE(store->recover().has_value());
    EXPECT_TRUE(completions.waitFor(1)[0].second.has_value());
    auto again = store->recover();
    ASSERT_FALSE(again.has_value());
    EXPECT_EQ(again.error().code, ErrorCode::kInternal);
  }
  {
    Completions never;
    auto store = openStore();
    store->submit(grant(2), never.callback(2));
    store.reset();  // closed without recover(): the record is refused, not dropped
    const auto results = never.waitFor(1);
    ASSERT_FALSE(results[0].second.has_value());
    EXPECT_EQ(results[0].second.error().code, ErrorCode::kUnavailable);
  }
}

TEST_F(LeaseStoreTest, RejectsAnUnencodableRecordWithoutFailingTheStore) {
  auto store = openStore();
  ASSERT_TRUE(store->recover().has_value());
  JournalRecord bad = grant(1);
  bad.lease.netns.assign(kMaxStringBytes + 1, 'x');
  Completions completions;
  store->submit(grant(0), completions.callback(0));
  store->submit(bad, completions.callback(1));
  store->submit(grant(2), completions.callback(2));
  const auto results = completions.waitFor(3);
  EXPECT_TRUE(results[0].second.has_value());
  ASSERT_FALSE(results[1].second.has_value());
  EXPECT_EQ(results[1].second.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(results[2].second.has_value());
  EXPECT_FALSE(store->stats().failed);
  store.reset();
  EXPECT_EQ(keysOf(reopenAndRecover()),
            (std::set<std::string>{sampleLease(0).key.str(), sampleLease(2).key.str()}));
}

TEST_F(LeaseStoreTest, FailedFdatasyncFailsTheBatchAndEverythingAfterIt) {
  auto fs = std::make_shared<FaultyFileOps>();
  int failures = 0;
  StoreOptions options;
  options.fileOps = fs;
  options.onFailure = [&](const Error&) { ++failures; };
  auto opened = LeaseStore::open(stateDir(), options);
  ASSERT_TRUE(opened.has_value());
  auto& store = **opened;
  ASSERT_TRUE(store.recover().has_value());
  ASSERT_TRUE(submitAndWait(store, grant(0)).has_value());

  fs->failOnce(Op::kFdatasync, EIO);
  auto failed = submitAndWait(store, grant(1));
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, ErrorCode::kIo);
  EXPECT_NE(failed.error().message.find("Input/output error"), std::string::npos);
  // The disk works again, but the tail is unknown: nothing more is acknowledged.
  auto later = submitAndWait(store, grant(2));
  ASSERT_FALSE(later.has_value());
  EXPECT_NE(later.error().message.find("failed earlier"), std::string::npos);
  EXPECT_FALSE(compactAndWait(store, {sampleLease(0)}).has_value());
  EXPECT_EQ(fs->calls(Op::kFdatasync), 2);  // no retry on top of the failed one
  EXPECT_TRUE(store.stats().failed);
  EXPECT_EQ(store.stats().failedRecords, 2u);
  EXPECT_EQ(failures, 1);

  opened->reset();
  const auto keys = keysOf(reopenAndRecover());
  EXPECT_TRUE(keys.contains(sampleLease(0).key.str()));   // acknowledged: must survive
  EXPECT_FALSE(keys.contains(sampleLease(2).key.str()));  // never written
}

TEST_F(LeaseStoreTest, EnospcInTheMiddleOfAWriteReachesDoneAndLeavesATornTail) {
  auto fs = std::make_shared<FaultyFileOps>();
  auto store = openStore(fs);
  ASSERT_TRUE(store->recover().has_value());
  ASSERT_TRUE(submitAndWait(*store, grant(0)).has_value());
  fs->setMaxWrite(5);  // the write gets 5 bytes in, then the disk is full
  fs->failOnce(Op::kPwrite, ENOSPC, 1);
  auto failed = submitAndWait(*store, grant(1));
  ASSERT_FALSE(failed.has_value());
  EXPECT_NE(failed.error().message.find("No space left on device"), std::string::npos);
  EXPECT_FALSE(submitAndWait(*store, grant(2)).has_value());
  store.reset();

  LeaseStore* reopened = nullptr;
  EXPECT_EQ(keysOf(reopenAndRecover(&reopened)), (std::set<std::string>{sampleLease(0).key.str()}));
  EXPECT_TRUE(reopened->stats().recovery.tornTailDropped);
  EXPECT_EQ(reopened->stats().recovery.tornBytes, 5u);
  // The torn bytes are gone, so new appends are readable.
  ASSERT_TRUE(submitAndWait(*reopened, grant(3)).has_value());
  reopened_.reset();
  EXPECT_EQ(reopenAndRecover().size(), 2u);
}

TEST_F(LeaseStoreTest, ShortWritesStillMakeACompleteJournal) {
  auto fs = std::make_shared<FaultyFileOps>();
  fs->setMaxWrite(7);
  auto store = openStore(fs);
  ASSERT_TRUE(store->recover().has_value());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(submitAndWait(*store, grant(i)).has_value());
  store.reset();
  EXPECT_EQ(reopenAndRecover().size(), 20u);
}

TEST_F(LeaseStoreTest, CompactionSnapshotsTheStateAtItsPlaceInTheSubmissionOrder) {
  {
    auto store = openStore();
    ASSERT_TRUE(store->recover().has_value());
    Completions completions;
    store->submit(grant(0), completions.callback(0));
    store->submit(grant(1), completions.callback(1));
    store->submitCompaction({sampleLease(0), sampleLease(1)}, completions.callback(2));
    store->submit(grant(2), completions.callback(3));
    const auto results = completions.waitFor(4);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(results[i].first, i);
      EXPECT_TRUE(results[i].second.has_value());
    }
    const StoreStats stats = store->stats();
    EXPECT_EQ(stats.generation, 1u);
    EXPECT_EQ(stats.compactions, 1u);
    EXPECT_EQ(store->journalBytes(),
              std::filesystem::file_size(stateDir() / "journal.1") - kJournalHeaderBytes);
    EXPECT_FALSE(std::filesystem::exists(stateDir() / "journal.0"));
  }
  LeaseStore* store = nullptr;
  EXPECT_EQ(reopenAndRecover(&store).size(), 3u);
  const auto recovery = store->stats().recovery;
  EXPECT_EQ(recovery.generation, 1u);
  EXPECT_EQ(recovery.snapshotLeases, 2u);
  EXPECT_EQ(recovery.recordsReplayed, 1u);
}

TEST_F(LeaseStoreTest, FailedCompactionBeforeTheRenameKeepsTheStoreWorking) {
  auto fs = std::make_shared<FaultyFileOps>();
  auto store = openStore(fs);
  ASSERT_TRUE(store->recover().has_value());
  ASSERT_TRUE(submitAndWait(*store, grant(0)).has_value());
  fs->failOnce(Op::kPwrite, ENOSPC);  // the snapshot write
  EXPECT_FALSE(compactAndWait(*store, {sampleLease(0)}).has_value());
  EXPECT_FALSE(store->stats().failed);
  ASSERT_TRUE(submitAndWait(*store, grant(1)).has_value());
  fs->failOnce(Op::kRename, EIO);
  EXPECT_FALSE(compactAndWait(*store, {sampleLease(0), sampleLease(1)}).has_value());
  EXPECT_TRUE(store->stats().failed);  // which generation is live is now unknown
  EXPECT_FALSE(submitAndWait(*store, grant(2)).has_value());
  store.reset();
  EXPECT_EQ(reopenAndRecover().size(), 2u);
}

// Crash at every mutating step of "compact, then keep writing", with and without losing what was
// not yet fsynced: every acknowledged record must be there after the restart.
TEST_F(LeaseStoreTest, KeepsEveryAcknowledgedRecordWhenCrashingAtAnyStep) {
  for (const bool powerLoss : {false, true}) {
    for (int step = 1;; ++step) {
      SCOPED_TRACE("crash at step " + std::to_string(step) + (powerLoss ? " with" : " without") +
                   " power loss");
      std::error_code ignored;
      std::filesystem::remove_all(stateDir(), ignored);
      auto fs = std::make_shared<FaultyFileOps>();
      std::vector<std::pair<int, Result<void>>> results;
      {
        auto store = openStore(fs);
        ASSERT_TRUE(store->recover().has_value());
        ASSERT_TRUE(submitAndWait(*store, grant(0)).has_value());
        ASSERT_TRUE(submitAndWait(*store, grant(1)).has_value());
        fs->crashAfter(step);
        Completions completions;
        store->submitCompaction({sampleLease(0), sampleLease(1)}, completions.callback(0));
        store->submit(grant(2), completions.callback(1));
        store->submit(release(0), completions.callback(2));
        store->submit(grant(3), completions.callback(3));
        results = completions.waitFor(4);
      }
      const bool crashed = fs->crashed();
      if (powerLoss) fs->loseUnsyncedData();
      reopened_.reset();
      const auto keys = keysOf(reopenAndRecover());
      ASSERT_TRUE(reopened_ != nullptr);
      EXPECT_TRUE(keys.contains(sampleLease(1).key.str()));
      // A failed record is unknown, not absent, so only acknowledged ones are checked.
      if (results[1].second) {
        EXPECT_TRUE(keys.contains(sampleLease(2).key.str()));
      }
      if (results[2].second) {
        EXPECT_FALSE(keys.contains(sampleLease(0).key.str()));
      }
      if (results[3].second) {
        EXPECT_TRUE(keys.contains(sampleLease(3).key.str()));
      }
      if (!crashed) {
        // The crash point lay beyond everything: all steps have been covered.
        EXPECT_GT(step, 10);
        EXPECT_TRUE(std::all_of(results.begin(), results.end(),
                                [](const auto& r) { return r.second.has_value(); }));
        break;
      }
      ASSERT_LT(step, 100) << "runaway loop";
    }
  }
}

// The first start, crashed at each of its mutating steps (with and without losing what was not
// fsynced): nothing was acknowledged yet, so the next start must begin an empty store, not refuse
// a journal.0 whose creation was torn. Its journal is then guarded like any live one.
TEST_F(LeaseStoreTest, StartsEmptyAfterACrashAtAnyStepOfTheFirstStart) {
  for (const bool powerLoss : {false, true}) {
    for (int step = 1;; ++step) {
      SCOPED_TRACE("crash at step " + std::to_string(step) + (powerLoss ? " with" : " without") +
                   " power loss");
      std::error_code ignored;
      std::filesystem::remove_all(stateDir(), ignored);
      auto fs = std::make_shared<FaultyFileOps>();
      fs->crashAfter(step);
      bool recovered = false;
      if (auto store = LeaseStore::open(stateDir(), {.fileOps = fs})) {
        recovered = (*store)->recover().has_value();
      }
      const bool crashed = fs->crashed();
      if (powerLoss) fs->loseUnsyncedData();
      reopened_.reset();
      LeaseStore* store = nullptr;
      EXPECT_TRUE(reopenAndRecover(&store).empty());
      ASSERT_NE(store, nullptr);
      EXPECT_EQ(readText(stateDir() / "snapshot"), encodeSnapshot(0, {}).value());
      ASSERT_TRUE(submitAndWait(*store, grant(0)).has_value());
      reopened_.reset();
      EXPECT_EQ(reopenAndRecover().size(), 1u);
      if (!crashed) {
        EXPECT_TRUE(recovered);
        EXPECT_GT(step, 5);
        break;
      }
      ASSERT_LT(step, 100) << "runaway loop";
    }
  }
}

class LeaseStoreDiskStateTest : public LeaseStoreTest {
 protected:
  void SetUp() override { std::filesystem::create_directory(stateDir()); }

  void writeJournal(uint64_t generation, const std::vector<JournalRecord>& records) {
    std::string image = journalHeader(generation);
    for (const auto& record : records) {
      std::string payload;
      ASSERT_TRUE(encodeRecord(record, payload).has_value());
      appendFrame(image, payload);
    }
    writeFile(journalPath(stateDir(), generation), image);
  }

  void writeSnapshot(uint64_t generation, const std::vector<Lease>& leases) {
    writeFile(stateDir() / "snapshot", encodeSnapshot(generation, leases).value());
  }

  Error recoverError() {
    auto store = openStore();
    auto leases = store->recover();
    EXPECT_FALSE(leases.has_value());
    return leases ? Error{} : leases.error();
  }
};

TEST_F(LeaseStoreDiskStateTest, RemovesLeftoversOfInterruptedCompactions) {
  writeSnapshot(2, {sampleLease(1)});
  writeJournal(1, {grant(9)});  // finished compaction, unlink not done
  writeJournal(2, {grant(2)});  // live
  writeJournal(3, {});          // crashed before the rename
  writeFile(stateDir() / "snapshot.tmp", "half a snapshot");
  writeFile(stateDir() / "journal.backup", "not ours");
  LeaseStore* store = nullptr;
  EXPECT_EQ(keysOf(reopenAndRecover(&store)),
            (std::set<std::string>{sampleLease(1).key.str(), sampleLease(2).key.str()}));
  EXPECT_EQ(store->stats().recovery.staleFilesRemoved, 3u);
  EXPECT_FALSE(std::filesystem::exists(stateDir() / "journal.1"));
  EXPECT_FALSE(std::filesystem::exists(stateDir() / "journal.3"));
  EXPECT_FALSE(std::filesystem::exists(stateDir() / "snapshot.tmp"));
  EXPECT_TRUE(std::filesystem::exists(stateDir() / "journal.backup"));
  // New records go to the live generation.
  ASSERT_TRUE(submitAndWait(*store, grant(4)).has_value());
  reopened_.reset();
  EXPECT_EQ(reopenAndRecover().size(), 3u);
}

TEST_F(LeaseStoreDiskStateTest, AcceptsAnEmptyTornNextJournalWithoutASnapshot) {
  writeJournal(0, {grant(0)});
  writeFile(journalPath(stateDir(), 1), journalHeader(1).substr(0, 3));
  EXPECT_EQ(reopenAndRecover().size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(journalPath(stateDir(), 1)));
}

TEST_F(LeaseStoreDiskStateTest, RefusesANextJournalThatHoldsRecords) {
  writeJournal(0, {grant(0)});
  writeJournal(1, {grant(1)});  // records can only follow a durable snapshot 1, which is gone
  const Error error = recoverError();
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_NE(error.message.find("journal.1"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(journalPath(stateDir(), 1)));  // left for inspection
}

TEST_F(LeaseStoreDiskStateTest, RefusesAJournalTwoGenerationsAhead) {
  writeSnapshot(2, {});
  writeJournal(2, {});
  writeJournal(4, {});
  EXPECT_NE(recoverError().message.find("journal.4"), std::string::npos);
}

TEST_F(LeaseStoreDiskStateTest, RefusesASnapshotWhoseJournalIsMissing) {
  writeSnapshot(2, {sampleLease(0)});
  const Error error = recoverError();
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_NE(error.message.find("journal.2"), std::string::npos);
}

TEST_F(LeaseStoreDiskStateTest, ReportsANextJournalHoldingRecordsBeforeAMissingLiveJournal) {
  writeSnapshot(2, {sampleLease(0)});
  writeJournal(3, {grant(1)});
  const Error error = recoverError();
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_EQ(error.message, "lease store " + stateDir().string() + ": " +
                               journalPath(stateDir(), 3).string() +
                               " holds records but the snapshot is at generation 2; the snapshot "
                               "may have been lost or replaced, refusing to start");
  EXPECT_TRUE(std::filesystem::exists(journalPath(stateDir(), 3)));
}

TEST_F(LeaseStoreDiskStateTest, RefusesACorruptSnapshot) {
  std::string image = encodeSnapshot(1, {sampleLease(0)}).value();
  image[image.size() / 2] ^= 0x40;
  writeFile(stateDir() / "snapshot", image);
  writeJournal(1, {});
  EXPECT_NE(recoverError().message.find("snapshot"), std::string::npos);
}

TEST_F(LeaseStoreDiskStateTest, RefusesCorruptionInTheMiddleOfTheJournalNamingTheOffset) {
  writeJournal(0, {grant(0), grant(1), grant(2)});
  std::string image = readText(journalPath(stateDir(), 0));
  image[kJournalHeaderBytes + kFrameHeaderBytes + 3] ^= 0x01;  // first record's payload
  writeFile(journalPath(stateDir(), 0), image);
  const Error error = recoverError();
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_NE(error.message.find("byte offset 16"), std::string::npos) << error.message;
  EXPECT_EQ(readText(journalPath(stateDir(), 0)), image);
}

// A live journal is named by a snapshot whose rename followed the fsync of the journal's header
// (a new store's first snapshot included), so no crash leaves it missing or shorter than its
// header. Emptied, cut or removed after the fact, it must stop the start, not hand out the
// ports of the acknowledged grants it held again.
TEST_F(LeaseStoreTest, RefusesALiveJournalEmptiedCutOrRemovedAfterAcknowledgedRecords) {
  for (const test::LiveJournalDamage& c : test::liveJournalDamages()) {
    SCOPED_TRACE(c.name);
    std::error_code ignored;
    std::filesystem::remove_all(stateDir(), ignored);
    {
      auto store = openStore();
      ASSERT_NE(store, nullptr);
      ASSERT_OK(store->recover());
      ASSERT_OK(submitAndWait(*store, grant(0)));
      ASSERT_OK(submitAndWait(*store, grant(1)));
      if (c.compacted) {
        ASSERT_OK(compactAndWait(*store, {sampleLease(0), sampleLease(1)}));
      }
      ASSERT_OK(submitAndWait(*store, grant(2)));
      ASSERT_OK(submitAndWait(*store, release(0)));
    }
    const auto live = journalPath(stateDir(), c.compacted ? 1 : 0);
    ASSERT_TRUE(std::filesystem::exists(live));
    c.applyTo(live);
    auto store = openStore();
    ASSERT_NE(store, nullptr);
    auto leases = store->recover();
    if (leases) {
      ADD_FAILURE() << "recovered " << leases->size() << " leases; 3 were acknowledged";
      continue;
    }
    EXPECT_EQ(leases.error().code, ErrorCode::kIo);
    EXPECT_NE(leases.error().message.find(live.string()), std::string::npos)
        << leases.error().message;
    EXPECT_NE(leases.error().message.find("refusing to start"), std::string::npos)
        << leases.error().message;
    // Left as found, for an operator to inspect or restore.
    if (c.keep) {
      EXPECT_EQ(std::filesystem::file_size(live), *c.keep);
    } else {
      EXPECT_FALSE(std::filesystem::exists(live));
    }
  }
}

// A store written before every store had a snapshot: journal.0 alone. Its records are replayed
// and its first snapshot written, after which it is guarded as a new store's is.
TEST_F(LeaseStoreDiskStateTest, AdoptsAJournalWithoutASnapshotAndGuardsItFromThenOn) {
  writeJournal(0, {grant(0), grant(1), release(0)});
  EXPECT_EQ(keysOf(reopenAndRecover()), (std::set<std::string>{sampleLease(1).key.str()}));
  EXPECT_EQ(readText(stateDir() / "snapshot"), encodeSnapshot(0, {}).value());
  reopened_.reset();
  EXPECT_EQ(reopenAndRecover().size(), 1u);  // the snapshot of generation 0 is empty
  reopened_.reset();
  writeFile(journalPath(stateDir(), 0), "");
  const Error error = recoverError();
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_NE(error.message.find(journalPath(stateDir(), 0).string()), std::string::npos);
}

// What a crash on a first start before this version can leave: journal.0 short, no snapshot.
TEST_F(LeaseStoreDiskStateTest, StartsOverAJournalZeroWhoseCreationWasTornWithoutASnapshot) {
  for (const size_t length : {size_t{0}, size_t{9}}) {
    SCOPED_TRACE(length);
    std::filesystem::remove(stateDir() / "snapshot");
    writeFile(journalPath(stateDir(), 0), journalHeader(0).substr(0, length));
    LeaseStore* store = nullptr;
    EXPECT_TRUE(reopenAndRecover(&store).empty());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->stats().recovery.tornTailDropped, length > 0);
    EXPECT_EQ(readText(journalPath(stateDir(), 0)), journalHeader(0));
    EXPECT_EQ(readText(stateDir() / "snapshot"), encodeSnapshot(0, {}).value());
    reopened_.reset();
  }
}

TEST_F(LeaseStoreDiskStateTest, RefusesANextJournalWithNeitherTheSnapshotNorTheJournalBeforeIt) {
  writeJournal(1, {});  // what a deleted snapshot leaves right after a compaction
  const Error error = recoverError();
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_NE(error.message.find(journalPath(stateDir(), 1).string()), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(journalPath(stateDir(), 1)));
  EXPECT_FALSE(std::filesystem::exists(stateDir() / "snapshot"));
}

TEST_F(LeaseStoreDiskStateTest, ReportsATornTailInTheRecoveryStats) {
  writeJournal(0, {grant(0), grant(1)});
  std::string image = readText(journalPath(stateDir(), 0));
  writeFile(journalPath(stateDir(), 0), image.substr(0, image.size() - 3));
  LeaseStore* store = nullptr;
  EXPECT_EQ(reopenAndRecover(&store).size(), 1u);
  EXPECT_TRUE(store->stats().recovery.tornTailDropped);
  EXPECT_EQ(store->stats().recovery.recordsReplayed, 1u);
}

}  // namespace
}  // namespace hostport::agent::store
