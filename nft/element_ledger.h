#pragma once
// What a set of attachments expects of our maps and sets, checked element by element as a dump
// streams by (TableScan): the agent's reconciler compares the kernel with its leases through it.
//
// The ledger keeps one compact entry per expected element, sorted by the key the kernel's own
// hash uses (a forward by family, protocol, host address and host port; a masquerade by family,
// scope and pod address), so each element the dump reads costs one binary search, and of what
// the kernel holds it keeps only what nobody expects. At 65,535 leases the compare it replaced
// copied every element, grouped them in a map keyed by owner strings and diffed each lease
// against its group: most of a compare's own time, and ~100 MB of transient heap.
//
// Expected means what installing the attachment writes: the same target under the attachment's
// own owner tag. An element at an expected key with another target or another tag is unexpected
// (it is removed) and its attachment misses that element (it is installed again once the other
// is gone). A masquerade is keyed by its pod address alone, so attachments that share a pod
// address (an old sandbox's lease not yet released, and the new one's) expect one element: it is
// theirs under the tag of any of them. Elements under a tolerated owner are never unexpected.
//
// Pure: no I/O.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nft/forward.h"
#include "nft/table_state.h"

namespace hostport::nft {

class ElementLedger final : public TableScan {
 public:
  /// Expects what `rules` installs (forwards without conditions, masquerades, and pod subnets,
  /// which missing() judges), for the attachment numbered `attachment`. Every expectation comes
  /// before the scan; numbers are the caller's (a lease's index), each used once.
  void expect(uint32_t attachment, const AttachmentRules& rules);
  /// Elements and rules under `owner` are someone's the caller judges by other means (a lease
  /// whose rules have conditions, one it cannot plan): never unexpected.
  void tolerate(std::string_view owner);

  void forward(std::string_view owner, const Forward& forward,
               std::optional<uint64_t> ruleHandle) override;
  void masquerade(std::string_view owner, const Masquerade& masquerade) override;
  void podSubnet(const IpPrefix& subnet) override;

  struct Missing {
    uint32_t attachment = 0;
    std::size_t count = 0;  // expected pieces not found as expected
    std::string first;      // the first of them, as RulesDiff::describeFirstMissing() says it
  };
  /// Each attachment with an expected piece the scan did not find, in the order expected. A
  /// planned pod subnet is there when one of `podSubnets` overlaps it (the kernel refuses a subnet
  /// nested in another network's, and the one there serves it).
  std::vector<Missing> missing(const std::vector<IpPrefix>& podSubnets) const;
  /// What the scan found that nobody expects as it is, by owner tag, rules of the conditional
  /// chain included (unidentified, with their handles).
  std::map<std::string, AttachmentRules, std::less<>> takeUnexpected() {
    return std::move(unexpected_);
  }
  /// The pod subnets the scan found.
  std::vector<IpPrefix> takePodSubnets() { return std::move(podSubnets_); }
  /// The attachment whose owner tag is `owner`, if one was expected.
  std::optional<uint32_t> attachmentOf(std::string_view owner) const;
  /// The owner tag the attachment numbered `attachment` was expected under (empty for a number
  /// never expected): a caller that numbers its attachments need keep nothing else of them.
  std::string_view ownerOf(uint32_t attachment) const;

 private:
  /// An element's key as the kernel's hash keys it, in three words that compare and hash fast.
  struct PackedKey {
    uint64_t head = 0;  // family, protocol or scope, whether a host address is named, port
    uint64_t high = 0;  // the address's first 8 bytes
    uint64_t low = 0;   // and its last 8 (an IPv4 address leaves them zero)
    bool operator==(const PackedKey&) const = default;
  };
  /// Open addressing over entries' keys: each slot holds an entry's position + 1 (0: empty).
  /// Keys may repeat (leases sharing a masquerade); a lookup visits every entry with its key.
  class KeyIndex {
   public:
    template <typename Entry>
    void build(const std::vector<Entry>& entries);
    template <typename Entry, typename Visit>
    void forEach(std::vector<Entry>& entries, const PackedKey& key, Visit visit) const;

   private:
    static uint64_t hash(const PackedKey& key);
    std::vector<uint32_t> slots_;
    uint64_t mask_ = 0;
  };
  // Each entry carries its owner tag's hash: the dump comes in hash order, so looking the tag
  // itself up would cost a few cache misses per element (~40 ms at 65,535 leases). A tag that
  // differs but hashes the same would pass for the lease's own; it forwards what the lease
  // expects either way, and only a writer of our table could choose one.
  // `attachment` is the position in attachments_.
  struct ForwardEntry {
    PackedKey key;
    IpAddress containerIp;
    uint16_t containerPort = 0;
    uint32_t attachment = 0;
    uint64_t ownerHash = 0;
    bool found = false;
  };
  struct MasqueradeEntry {
    PackedKey key;
    uint32_t attachment = 0;
    uint64_t ownerHash = 0;
    bool found = false;
  };
  struct Attachment {
    uint32_t number = 0;
    std::size_t ownerAt = 0;  // into owners_
    std::size_t ownerSize = 0;
    std::size_t subnetsAt = 0;  // into subnetRefs_
    std::size_t subnetCount = 0;
  };

  static uint64_t ownerHash(std::string_view owner) { return std::hash<std::string_view>{}(owner); }
  static PackedKey keyOf(const Forward& forward);
  static PackedKey keyOf(const Masquerade& masquerade);
  /// The forward or masquerade whose key `key` is, for missing()'s description.
  static Forward forwardOf(const ForwardEntry& entry);
  static std::optional<Masquerade> masqueradeOf(const PackedKey& key);
  /// Indexes what was expected (and sorts the tolerated owners), once, before the first element
  /// is looked up.
  void seal();
  std::string_view ownerOf(const Attachment& attachment) const;
  bool tolerated(std::string_view owner) const;
  AttachmentRules& unexpectedOf(std::string_view owner);

  std::vector<Attachment> attachments_;  // in the order expected
  /// Owner tag -> attachment number, made when attachmentOf() is first asked.
  mutable std::unordered_map<std::string_view, uint32_t> byOwner_;
  /// Positions in attachments_ by number, made when ownerOf(number) is first asked.
  mutable std::vector<uint32_t> byNumber_;
  std::string owners_;  // every owner tag, back to back
  /// The pod subnets planned, each once (a node has a few; every lease of a network plans the
  /// same one), and each attachment's, back to back, as positions in it.
  std::vector<IpPrefix> subnets_;
  std::vector<uint32_t> subnetRefs_;
  std::vector<std::string> tolerated_;  // sorted and unique once sealed
  std::vector<ForwardEntry> forwards_;
  std::vector<MasqueradeEntry> masquerades_;
  KeyIndex forwardIndex_;
  KeyIndex masqueradeIndex_;
  bool sealed_ = false;
  std::map<std::string, AttachmentRules, std::less<>> unexpected_;
  std::vector<IpPrefix> podSubnets_;
};

}  // namespace hostport::nft
