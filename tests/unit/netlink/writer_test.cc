#include "netlink/writer.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "netlink/attributes.h"
#include "tests/unit/netlink/netlink_test_bytes.h"

namespace hostport::netlink {
namespace {

using test::append;
using test::attr;
using test::be16;
using test::be32;
using test::bytesOf;
using test::ByteVector;
using test::headerOf;
using test::hostBytes;
using test::nest;

/// What the writer must produce for a request: the hand-built message with seq and pid zero.
ByteVector request(uint16_t type, uint16_t flags, const ByteVector& body) {
  ByteVector out = hostBytes<uint32_t>(static_cast<uint32_t>(16 + body.size()));
  append(out, hostBytes<uint16_t>(type));
  append(out, hostBytes<uint16_t>(flags));
  append(out, ByteVector(8));  // seq and pid: the socket stamps them
  append(out, body);
  return out;
}

/// A three-byte family header, so the writer has padding to add.
struct OddHeader {
  uint8_t a = 0;
  uint8_t b = 0;
  uint8_t c = 0;
};

TEST(NetlinkWriterTest, WritesABareHeaderWithItsLengthAndFlagsAsGiven) {
  NetlinkWriter writer;
  writer.beginMessage(0x1234, NLM_F_REQUEST | NLM_F_DUMP);
  writer.endMessage();
  EXPECT_EQ(writer.take(), request(0x1234, NLM_F_REQUEST | NLM_F_DUMP, {}));
}

TEST(NetlinkWriterTest, PadsTheFamilyHeaderToFourBytes) {
  NetlinkWriter writer;
  writer.beginMessage(7, NLM_F_REQUEST, OddHeader{1, 2, 3});
  writer.u8Attribute(9, 0xaa);
  writer.endMessage();
  EXPECT_EQ(writer.take(), request(7, NLM_F_REQUEST, [] {
              ByteVector body = bytesOf({1, 2, 3, 0});
              append(body, attr(9, bytesOf({0xaa})));
              return body;
            }()));
}

TEST(NetlinkWriterTest, AttributeLengthLeavesOutThePaddingThatTheMessageCounts) {
  NetlinkWriter writer;
  writer.beginMessage(1, 0);
  writer.attribute(5, bytesOf({1, 2, 3, 4, 5}));
  writer.endMessage();
  const ByteVector bytes = writer.take();
  ASSERT_EQ(bytes.size(), 16u + 12u);
  EXPECT_EQ(headerOf(bytes).nlmsg_len, 28u);
  EXPECT_EQ(ByteVector(bytes.begin() + 16, bytes.end()),
            bytesOf({9, 0, 5, 0, 1, 2, 3, 4, 5, 0, 0, 0}));
}

TEST(NetlinkWriterTest, AnEmptyAttributeIsJustItsHeader) {
  NetlinkWriter writer;
  writer.beginMessage(1, 0);
  writer.attribute(3, {});
  writer.endMessage();
  EXPECT_EQ(writer.take(), request(1, 0, attr(3, {})));
}

TEST(NetlinkWriterTest, StringsAreNulTerminated) {
  NetlinkWriter writer;
  writer.beginMessage(1, 0);
  writer.stringAttribute(2, "hostport");
  writer.stringAttribute(3, "");
  writer.endMessage();
  ByteVector body = attr(2, bytesOf({'h', 'o', 's', 't', 'p', 'o', 'r', 't', 0}));
  append(body, attr(3, bytesOf({0})));
  EXPECT_EQ(writer.take(), request(1, 0, body));
}

TEST(NetlinkWriterTest, AStringThatIsAViewEndsAtTheViewNotAtTheNextNul) {
  const std::string_view text = "hostport-ports";
  NetlinkWriter writer;
  writer.beginMessage(1, 0);
  writer.stringAttribute(2, text.substr(0, 4));
  writer.endMessage();
  EXPECT_EQ(writer.take(), request(1, 0, attr(2, bytesOf({'h', 'o', 's', 't', 0}))));
}

TEST(NetlinkWriterTest, IntegersHaveTheByteOrderTheirNameSays) {
  NetlinkWriter writer;
  writer.beginMessage(1, 0);
  writer.u8Attribute(1, 17);
  writer.be16Attribute(2, 0x1234);
  writer.be32Attribute(3, 0xdeadbeef);
  writer.hostU32Attribute(4, 0x28);
  writer.endMessage();
  ByteVector body = attr(1, bytesOf({17}));
  append(body, attr(2, be16(0x1234)));
  append(body, attr(3, be32(0xdeadbeef)));
  append(body, attr(4, hostBytes<uint32_t>(0x28)));
  EXPECT_EQ(writer.take(), request(1, 0, body));
}

TEST(NetlinkWriterTest, NestsCoverTheirChildrenAndCarryTheNestedFlag) {
  NetlinkWriter writer;
  writer.beginMessage(1, 0);
  const size_t outer = writer.beginNest(1);
  const size_t inner = writer.beginNest(2);
  writer.u8Attribute(1, 17);
  writer.be16Attribute(3, 5353);
  writer.endNest(inner);
  writer.endNest(outer);
  const size_t empty = writer.beginNest(4);
  writer.endNest(empty);
  writer.endMessage();
  ByteVector body = nest(1, {nest(2, {attr(1, bytesOf({17})), attr(3, be16(5353))})});
  append(body, nest(4, {}));
  EXPECT_EQ(writer.take(), request(1, 0, body));
}

TEST(NetlinkWriterTest, MessagesOfABatchFollowEachOtherEachWithItsOwnLength) {
  NetlinkWriter writer;
  writer.beginMessage(0x10, NLM_F_REQUEST);
  writer.endMessage();
  writer.beginMessage(0x11, NLM_F_REQUEST | NLM_F_ACK);
  writer.stringAttribute(1, "ab");
  writer.endMessage();
  writer.beginMessage(0x12, NLM_F_REQUEST);
  writer.endMessage();
  EXPECT_EQ(writer.size(), 16u + 24u + 16u);

  ByteVector expected = request(0x10, NLM_F_REQUEST, {});
  append(expected, request(0x11, NLM_F_REQUEST | NLM_F_ACK, attr(1, bytesOf({'a', 'b', 0}))));
  append(expected, request(0x12, NLM_F_REQUEST, {}));
  EXPECT_EQ(writer.take(), expected);
}

TEST(NetlinkWriterTest, TakeLeavesTheWriterEmptyForTheNextRequest) {
  NetlinkWriter writer;
  writer.beginMessage(1, 0);
  writer.u8Attribute(1, 1);
  writer.endMessage();
  EXPECT_FALSE(writer.take().empty());
  EXPECT_EQ(writer.size(), 0u);
  writer.beginMessage(2, 0);
  writer.endMessage();
  EXPECT_EQ(writer.take(), request(2, 0, {}));
}

TEST(NetlinkWriterTest, TheAttributeReaderReadsBackWhatWasWritten) {
  NetlinkWriter writer;
  writer.beginMessage(1, 0, OddHeader{});
  writer.stringAttribute(1, "set");
  const size_t list = writer.beginNest(2);
  for (uint16_t port = 1; port <= 3; ++port) writer.be16Attribute(1, port);
  writer.endNest(list);
  writer.endMessage();
  const ByteVector bytes = writer.take();

  const auto message = messageBytes(bytes);
  ASSERT_TRUE(message);
  EXPECT_EQ(message->size(), bytes.size());
  std::vector<uint16_t> ports;
  const bool ok = forEachAttribute(message->subspan(16 + 4), [&](uint16_t type, Bytes payload) {
    if (type != 2) return true;
    return forEachAttribute(payload, [&](uint16_t, Bytes item) {
      ports.push_back(readBe16(item).value_or(0));
      return true;
    });
  });
  EXPECT_TRUE(ok);
  EXPECT_EQ(ports, (std::vector<uint16_t>{1, 2, 3}));
}

}  // namespace
}  // namespace hostport::netlink
