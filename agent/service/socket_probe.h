#pragma once

#include <memory>

#include "agent/core/allocator.h"
#include "hostnet/socket_table.h"

namespace hostport::agent {

/// PortProbe over one sock_diag snapshot of the host's sockets, taken per request. The owner's
/// pid and command are looked up (a /proc scan) only for the error message of a static claim.
class SocketTableProbe : public PortProbe {
 public:
  static Result<std::unique_ptr<PortProbe>> snapshot();
  bool isBound(nft::Protocol protocol, uint16_t port) override;
  PortHolder holderOf(nft::Protocol protocol, uint16_t port) override;

 private:
  explicit SocketTableProbe(hostnet::SocketTable table) : table_(std::move(table)) {}
  hostnet::SocketTable table_;
};

}  // namespace hostport::agent
