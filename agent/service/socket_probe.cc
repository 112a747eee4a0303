#include "agent/service/socket_probe.h"

#include <netinet/in.h>

#include "hostnet/socket_owner.h"

namespace hostport::agent {
namespace {

uint8_t ipProtocol(nft::Protocol protocol) {
  switch (protocol) {
    case nft::Protocol::kTcp:
      return IPPROTO_TCP;
    case nft::Protocol::kUdp:
      return IPPROTO_UDP;
    case nft::Protocol::kSctp:
      return IPPROTO_SCTP;
  }
  return IPPROTO_TCP;
}

}  // namespace

Result<std::unique_ptr<PortProbe>> SocketTableProbe::snapshot() {
  auto table = hostnet::SocketTable::snapshot();
  if (!table) return withContext(table.error(), "reading the host's sockets");
  return std::unique_ptr<PortProbe>(new SocketTableProbe(std::move(*table)));
}

bool SocketTableProbe::isBound(nft::Protocol protocol, uint16_t port) {
  return table_.isBound(ipProtocol(protocol), port);
}

PortHolder SocketTableProbe::holderOf(nft::Protocol protocol, uint16_t port) {
  PortHolder holder;
  if (const auto inode = table_.inodeOf(ipProtocol(protocol), port)) {
    auto owner = hostnet::findSocketOwner(*inode);
    if (owner && *owner) {
      holder.pid = (*owner)->pid;
      holder.command = (*owner)->command;
    }
  }
  return holder;
}

}  // namespace hostport::agent
