#include "agent/api/node_files.h"

#include <gtest/gtest.h>

#include "common/atomic_file.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::api {
namespace {

Lease sampleLease() {
  Lease lease;
  lease.key = {"c0ffee", "eth0"};
  lease.pod = {"games", "server-0", "uid-1"};
  lease.netns = "/var/run/netns/cni-1";
  lease.pool = "default";
  lease.ports = {{"web", PortProtocol::kTcp, 30000, 80, 1, std::nullopt, false}};
  lease.forwarding = Forwarding{.network = "net",
                                .podV4 = IpPrefix{*IpAddress::parse("10.88.0.5"), 16},
                                .podV6 = std::nullopt,
                                .snat = true,
                                .masqAll = false,
                                .conditionsV4 = "",
                                .conditionsV6 = ""};
  return lease;
}

TEST(NodeFilesTest, NamesAFileByItsKeyAndRefusesKeysOutsideTheGrammar) {
  EXPECT_EQ(nodeFileName({"c0ffee", "eth0"}).value(), "c0ffee:eth0");
  EXPECT_FALSE(nodeFileName({"../x", "eth0"}).has_value());
  EXPECT_FALSE(nodeFileName({"c", "a/b"}).has_value());
  EXPECT_FALSE(nodeFileName({"c", ".."}).has_value());
}

TEST(NodeFilesTest, KeepsRecallsAndForgetsAnAttachmentRecord) {
  test::TempDir dir;
  const Lease lease = sampleLease();
  EXPECT_EQ(readAttachmentRecord(dir.path(), lease.key).value(), std::nullopt);
  ASSERT_TRUE(writeAttachmentRecord(dir.path(), lease).has_value());
  EXPECT_EQ(readAttachmentRecord(dir.path(), lease.key).value(), lease);
  ASSERT_TRUE(removeAttachmentRecord(dir.path(), lease.key).has_value());
  EXPECT_EQ(readAttachmentRecord(dir.path(), lease.key).value(), std::nullopt);
}

TEST(NodeFilesTest, ADamagedOrMisplacedRecordIsADecodeError) {
  test::TempDir dir;
  const Lease lease = sampleLease();
  ASSERT_TRUE(writeFileAtomically(dir.path(), "c0ffee:eth0", "{not json", Durability::kCache));
  auto damaged = readAttachmentRecord(dir.path(), lease.key);
  ASSERT_FALSE(damaged.has_value());
  EXPECT_EQ(damaged.error().code, ErrorCode::kDecode);

  Lease other = lease;
  other.key.ifname = "net1";
  ASSERT_TRUE(writeAttachmentRecord(dir.path(), other).has_value());
  ASSERT_TRUE(std::filesystem::copy_file(dir / "c0ffee:net1", dir / "c0ffee:eth0",
                                         std::filesystem::copy_options::overwrite_existing));
  auto misplaced = readAttachmentRecord(dir.path(), lease.key);
  ASSERT_FALSE(misplaced.has_value());
  EXPECT_NE(misplaced.error().message.find("not of c0ffee/eth0"), std::string::npos);
}

TEST(NodeFilesTest, ReadsBackEveryReleaseNoteInNameOrderAndReportsBadOnes) {
  test::TempDir dir;
  const auto spool = dir / "released";
  EXPECT_TRUE(readReleaseNotes(spool).value().empty()) << "no spool yet: no notes";
  ASSERT_TRUE(writeReleaseNote(spool, {"b", "eth0"}).has_value());
  ASSERT_TRUE(writeReleaseNote(spool, {"a", "net1"}).has_value());
  ASSERT_TRUE(writeFileAtomically(spool, "z", "[]", Durability::kCache));
  ASSERT_TRUE(writeFileAtomically(spool, ".a:eth0.tmp-1", "partial", Durability::kCache));
  const auto notes = readReleaseNotes(spool).value();
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0].key.value(), (AttachmentKey{"a", "net1"}));
  EXPECT_EQ(notes[0].path, spool / "a:net1");
  EXPECT_EQ(notes[1].key.value(), (AttachmentKey{"b", "eth0"}));
  ASSERT_FALSE(notes[2].key.has_value());
  EXPECT_EQ(notes[2].key.error().code, ErrorCode::kDecode);
}

}  // namespace
}  // namespace hostport::agent::api
