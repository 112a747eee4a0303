#pragma once
// What a pod's address may be, in one place for both sides that read one: the plugin (from
// prevResult) and the agent (from its requests, which must not trust the plugin either). The
// address becomes the target of our DNAT and its prefix an element of the node-wide `podnets`
// set, whose sources are masqueraded toward every snat pod inside it; so an address that is not
// a pod's, or a prefix no pod subnet has, reaches the node's own services or rewrites the source
// of other pods' clients.
//
// Refused as a target: the unspecified network 0.0.0.0/8 and ::, loopback (127.0.0.0/8, ::1),
// link-local (169.254.0.0/16, fe80::/10: never routed to a pod, and 169.254.169.254 is a cloud's
// metadata service), multicast (224.0.0.0/4, ff00::/8), the limited broadcast 255.255.255.255,
// IPv4-mapped IPv6 (::ffff:0:0/96, never on the wire as IPv6), and the network (IPv6:
// Subnet-Router anycast) and IPv4 broadcast address of the address's own subnet when it has them
// (not /31, /32, /127, /128, which are point-to-point or host routes: Calico and Cilium hand
// pods a /32 or /128).
//
// Refused as a subnet: a prefix wider than /8 (IPv4) or /48 (IPv6). Pod subnets are a node's
// share of the cluster range (a /24 or /64 from host-local, a /32 or /128 from Calico and
// Cilium) or at widest a cloud VNet/VPC subnet; /8 is the widest private block (10.0.0.0/8) and
// /48 a whole site (RFC 6177). A default route, the attack this refuses, would put every
// client's source inside. A subnet may hold node addresses: the bridge's gateway (10.88.0.1 in
// 10.88.0.0/16), flannel's flannel.1 (10.244.1.0/32 in the node's /24) and Azure CNI's node NIC
// in the VNet subnet its pods share all do, legitimately. A target that *is* a node address is
// refused at install time, by a route lookup (forwards/plan_writer.h).

#include "common/identifiers.h"
#include "common/ip_address.h"

namespace hostport {

inline constexpr int kWidestPodPrefixV4 = 8;
inline constexpr int kWidestPodPrefixV6 = 48;

/// Why `address` ("10.88.0.5/24", the pod's address with its on-link prefix) cannot be a DNAT
/// target and pod subnet; none when it can. Pure: the node's own addresses are checked apart.
Problem podAddressProblem(const IpPrefix& address);

}  // namespace hostport
