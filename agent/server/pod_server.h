#pragma once
// The pod socket's transport: the same HTTP sessions as the control socket (http_connections.h),
// on an io_context and a thread of its own, so nothing a pod does (a flood of connections, a
// trickle of bytes, a request that waits for its lease) can delay the control socket, which the
// CNI plugin needs for every ADD and DEL. The socket is mode 0666: any process that can reach the
// directory may connect, and who it is comes from the kernel (peer_process.h), never from file
// permissions. Each caller is identified at accept, and at most maxConnectionsPerCaller
// connections of one caller are open at a time, counted by an identity it cannot multiply by
// making namespaces (caller_identity.h: a pod's netns, a container's pid namespace, a node
// process's uid), so one pod cannot take the others' slots; maxConnections bounds them all. A
// connection's slot is free as soon as its client closes it, even while a request of it waits
// (the sessions watch the socket meanwhile).
//
// The same server serves each pod's own socket in its CSI volume (serveVolume(), agent/csi): the
// same router, sessions and caps, on the same thread, with the caller's pod known from the socket
// it reached (ConnectionPeer::volumePod).

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "agent/server/router.h"
#include "agent/server/server_limits.h"
#include "common/error.h"

namespace hostport::agent::server {

struct PodServerOptions {
  std::string path;  // the socket, alone in its directory; empty: volume sockets only
  /// A pod sends a GET: small bodies and headers, a short read deadline. A request may still be
  /// held by its handler (GET /v1/self?wait=) for up to a minute after it was read.
  ServerLimits limits{.maxBodyBytes = 4 << 10,
                      .maxHeaderBytes = 8 << 10,
                      .readTimeout = std::chrono::milliseconds{5'000},
                      .maxConnections = 512};
  std::size_t maxConnectionsPerCaller = 16;
};

/// A pod's own socket in its CSI volume (PodServer::serveVolume()). Destroyed, it stops accepting
/// and its file is removed; connections already open end with their requests.
class VolumeSocket {
 public:
  ~VolumeSocket();
  VolumeSocket(const VolumeSocket&) = delete;
  VolumeSocket& operator=(const VolumeSocket&) = delete;

 private:
  friend class PodServer;
  struct Listener;
  explicit VolumeSocket(std::unique_ptr<Listener> listener);
  std::unique_ptr<Listener> listener_;
};

class PodServer {
 public:
  /// Binds `options.path` mode 0666 (its directory locked, created 0755 when missing and refused
  /// when another user may write it: socket_directory.h), serves
  /// `router` on `io` and runs `io` on a thread of its own. `io` is the pod socket's alone, and
  /// it and `router` outlive the server (handlers may post to a stopped `io`: it is destroyed
  /// last). Logs server.listening.
  static Result<std::unique_ptr<PodServer>> start(boost::asio::io_context& io, const Router& router,
                                                  PodServerOptions options);
  /// Serves the router at `path`, a socket in the CSI volume of the pod `podUid` (its directory
  /// made 0755, or checked, and locked, as the pod socket's), mode 0666: each caller is known as
  /// that pod, and judged by the same caps. Every VolumeSocket is destroyed before the server.
  Result<std::unique_ptr<VolumeSocket>> serveVolume(const std::string& path,
                                                    const std::string& podUid);
  /// Stops `io`, joins the thread and closes the socket. Requests still held are dropped with
  /// `io`.
  ~PodServer();
  PodServer(const PodServer&) = delete;
  PodServer& operator=(const PodServer&) = delete;

 private:
  struct State;
  explicit PodServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace hostport::agent::server
