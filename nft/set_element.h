#pragma once
// Our map and set elements as the bytes the kernel stores, for the netlink fast path
// (element_table.h). The layout is nft's own, so `nft list` prints what we write exactly as if
// nft had written it, and libnftables reads back what we write:
//  - every field of a concatenation takes a multiple of 4 bytes (one nft register), padded
//    with zeros after the value: inet_proto is 1 byte + 3, inet_service 2 bytes (big-endian) + 2;
//  - the masquerade sets are keyed by the pod address alone; podnets is an interval set of
//    concatenations: key is (first address . first address) of the subnet, keyEnd (last . last);
//  - the owner rides in the element's userdata as nft's comment TLV (type 0, NUL-terminated).
// Pure: no I/O.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nft/forward.h"
#include "nft/table_state.h"

namespace hostport::nft {

using ByteString = std::vector<std::byte>;

struct SetElement {
  Family family = Family::kIPv4;
  std::string set;  // a map or set of table_layout.h
  ByteString key;
  ByteString keyEnd;    // interval sets only
  ByteString data;      // maps only
  ByteString userdata;  // nft's TLVs: the comment

  friend bool operator==(const SetElement&, const SetElement&) = default;
};

/// An element as views into bytes someone else holds (a dump reply being read): what a scan reads
/// without copying each element it only looks at.
struct SetElementView {
  Family family = Family::kIPv4;
  std::string_view set;
  std::span<const std::byte> key;
  std::span<const std::byte> keyEnd;
  std::span<const std::byte> data;
  std::span<const std::byte> userdata;

  SetElementView() = default;
  SetElementView(const SetElement& element)  // NOLINT(google-explicit-constructor): a view of it
      : family(element.family),
        set(element.set),
        key(element.key),
        keyEnd(element.keyEnd),
        data(element.data),
        userdata(element.userdata) {}
};

/// A forward without conditions, in kPortsMap or kHostIpPortsMap.
SetElement elementOf(const Forward& forward, std::string_view owner);
SetElement elementOf(const Masquerade& masquerade, std::string_view owner);
/// A pod subnet in kPodSubnetsSet: no owner, since every attachment in it shares it.
SetElement podSubnetElement(const IpPrefix& subnet);

/// The comment in nft's userdata TLVs, as a view into `userdata`; empty when there is none. A
/// view, so a dump filtered by owner compares each element's comment without copying it.
std::string_view commentOf(std::span<const std::byte> userdata);
ByteString commentUserdata(std::string_view comment);

/// Reads back an element of one of our sets; nullopt for bytes we did not write (a wrong size,
/// an unknown protocol, a range that is not a prefix), which the caller treats as foreign.
/// The owner of each is commentOf(element.userdata).
std::optional<Forward> forwardIn(const SetElementView& element);
std::optional<Masquerade> masqueradeIn(const SetElementView& element);
std::optional<IpPrefix> podSubnetOf(const SetElementView& element);
/// forwardIn() and masqueradeIn() with their owner.
std::optional<InstalledForward> forwardOf(const SetElementView& element);
std::optional<InstalledMasquerade> masqueradeOf(const SetElementView& element);
/// Passes the element to `scan` as what it holds: a forward, a masquerade or a pod subnet; one
/// none of them reads is left out.
void scanElement(const SetElementView& element, TableScan& scan);
/// The forwards, masquerades and pod subnets that `elements` hold, read back with the three
/// functions above; elements none of them reads are left out.
TableState stateOf(const std::vector<SetElement>& elements);

}  // namespace hostport::nft
