#include "hostnet/route_message.h"

#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>
#include <string>

#include "netlink/attributes.h"
#include "netlink/writer.h"

namespace hostport::hostnet {

using netlink::Bytes;
using netlink::forEachAttribute;
using netlink::messageBytes;
using netlink::NetlinkWriter;
using netlink::readHostU32;
using netlink::readStruct;
namespace {

std::unexpected<Error> malformed(const std::string& why) {
  return fail(ErrorCode::kDecode, "malformed route reply: " + why);
}

}  // namespace

std::vector<std::byte> buildRouteGet(const IpAddress& destination) {
  const bool v4 = destination.family() == Family::kIPv4;
  rtmsg route{};
  route.rtm_family = v4 ? AF_INET : AF_INET6;
  route.rtm_dst_len = v4 ? 32 : 128;  // a host lookup, as `ip route get` does
  NetlinkWriter writer;
  writer.beginMessage(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_ACK, route);
  writer.attribute(RTA_DST, std::as_bytes(destination.bytes()));
  writer.endMessage();
  return writer.take();
}

Result<RouteReply> parseRouteReply(std::span<const std::byte> message) {
  const auto bytes = messageBytes(message);
  if (!bytes) return malformed("truncated netlink header or bad nlmsg_len");
  const auto header = readStruct<nlmsghdr>(*bytes);
  if (header->nlmsg_type != RTM_NEWROUTE) {
    return malformed("unexpected message type " + std::to_string(header->nlmsg_type));
  }
  const Bytes body = bytes->subspan(NLMSG_HDRLEN);
  const auto rtm = readStruct<rtmsg>(body);
  if (!rtm) return malformed("truncated rtmsg");
  if (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) {
    return malformed("unexpected family " + std::to_string(rtm->rtm_family));
  }
  std::optional<uint32_t> oif;
  bool badOif = false;
  const Bytes attributes = body.subspan(std::min(body.size(), NLMSG_ALIGN(sizeof(rtmsg))));
  const bool ok = forEachAttribute(attributes, [&](uint16_t type, Bytes payload) {
    if (type != RTA_OIF) return true;
    oif = readHostU32(payload);  // rtnetlink integers are host order
    badOif = !oif;
    return oif.has_value();
  });
  if (badOif) return malformed("RTA_OIF is not four bytes");
  if (!ok) return malformed("bad attribute length");
  if (oif == 0u) oif.reset();
  return RouteReply{rtm->rtm_type, oif};
}

Result<uint32_t> parseRouteOutputInterface(std::span<const std::byte> message) {
  HOSTPORT_TRY(const RouteReply reply, parseRouteReply(message));
  if (!reply.outputInterface) {
    return fail(ErrorCode::kNotFound,
                "route has no single output interface (blackhole, prohibit or multipath)");
  }
  return *reply.outputInterface;
}

}  // namespace hostport::hostnet
