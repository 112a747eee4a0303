// The one check of an attachment key on the control socket (agent/api/attachment_key.h): the
// grammar's own problem text, the field's path, and the same sentence from the codec.

#include "agent/api/attachment_key.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/api/json_codec.h"
#include "tests/support/result_assertions.h"

namespace hostport::agent::api {
namespace {

std::string errorOf(const Result<AttachmentKey>& checked) {
  EXPECT_FALSE(checked.has_value());
  if (checked) return "";
  EXPECT_EQ(checked.error().code, ErrorCode::kInvalidArgument);
  return checked.error().message;
}

TEST(AttachmentKeyTest, ReturnsAKeyWhoseFieldsKeepTheirGrammars) {
  ASSERT_OK_AND_ASSIGN(AttachmentKey key, checkAttachmentKey({"0123abc_.-", "net1"}));
  EXPECT_EQ(key, (AttachmentKey{"0123abc_.-", "net1"}));
  EXPECT_OK(checkContainerId("c1"));
}

TEST(AttachmentKeyTest, WordsARefusalWithTheGrammarsProblemText) {
  EXPECT_EQ(errorOf(checkAttachmentKey({"bad id", "eth0"})),
            "containerId: \"bad id\" must be 1-100 characters of [A-Za-z0-9_.-], starting "
            "alphanumeric");
  EXPECT_EQ(errorOf(checkAttachmentKey({"c1", "a/b"})), "ifname: \"a/b\" must not contain '/'");
  EXPECT_EQ(errorOf(checkAttachmentKey({"c1", ""})), "ifname: \"\" must not be empty");
  EXPECT_EQ(errorOf(checkAttachmentKey({"c1", "sixteen-chars-xx"})),
            "ifname: \"sixteen-chars-xx\" is longer than 15 characters");
}

TEST(AttachmentKeyTest, ChecksTheContainerIdBeforeTheIfname) {
  EXPECT_EQ(errorOf(checkAttachmentKey({"-c", "a/b"})),
            "containerId: \"-c\" must be 1-100 characters of [A-Za-z0-9_.-], starting "
            "alphanumeric");
}

TEST(AttachmentKeyTest, NamesTheFieldUnderItsPathAndQuotesTheValue) {
  EXPECT_EQ(errorOf(checkAttachmentKey({"c1", "a\"b"}, "valid[2]")),
            "valid[2].ifname: \"a\\\"b\" must not contain '\"'");
  const auto id = checkContainerId("x\n", "leases[0]");
  ASSERT_FALSE(id);
  EXPECT_EQ(id.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(id.error().message,
            "leases[0].containerId: \"x\\n\" must be 1-100 characters of [A-Za-z0-9_.-], "
            "starting alphanumeric");
}

TEST(AttachmentKeyTest, TheCodecRefusesABadKeyWithTheSameSentence) {
  for (const AttachmentKey& bad : {AttachmentKey{"bad id", "eth0"}, AttachmentKey{"c1", "a:b"}}) {
    const auto decoded = attachmentKeyFromJson(toJson(bad));
    ASSERT_FALSE(decoded);
    EXPECT_EQ(decoded.error().message, errorOf(checkAttachmentKey(bad)));
  }
}

TEST(AttachmentKeyTest, TheCodecWantsBothFieldsAsStringsBeforeCheckingEither) {
  const auto decoded =
      attachmentKeyFromJson(nlohmann::json{{"containerId", "bad id"}, {"ifname", 5}});
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().message, "ifname: 5 must be a string");
}

}  // namespace
}  // namespace hostport::agent::api
