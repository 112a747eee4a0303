#include "nft/element_ledger.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <tuple>

namespace hostport::nft {
namespace {

/// An address's bytes as two words (IPv4 fills the first four bytes).
std::pair<uint64_t, uint64_t> addressWords(const IpAddress& address) {
  std::array<uint8_t, 16> bytes{};
  std::ranges::copy(address.bytes(), bytes.begin());
  uint64_t high = 0, low = 0;
  std::memcpy(&high, bytes.data(), 8);
  std::memcpy(&low, bytes.data() + 8, 8);
  return {high, low};
}

std::optional<IpAddress> addressOfWords(Family family, uint64_t high, uint64_t low) {
  std::array<uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), &high, 8);
  std::memcpy(bytes.data() + 8, &low, 8);
  return IpAddress::fromBytes(family, std::span(bytes.data(), addressSize(family)));
}

uint64_t head(Family family, uint8_t kind, bool named, uint16_t port) {
  return uint64_t{static_cast<uint8_t>(family)} << 32 | uint64_t{kind} << 24 |
         uint64_t{named} << 16 | port;
}

}  // namespace

uint64_t ElementLedger::KeyIndex::hash(const PackedKey& key) {
  // Multiply-xorshift over the three words: host ports and pod addresses differ in their low
  // bits, which the multiplications carry up to the bits the mask keeps.
  uint64_t h = key.head * 0x9E3779B97F4A7C15ULL;
  h ^= key.high * 0xC2B2AE3D27D4EB4FULL;
  h ^= key.low * 0x165667B19E3779F9ULL;
  return h ^ (h >> 29);
}

template <typename Entry>
void ElementLedger::KeyIndex::build(const std::vector<Entry>& entries) {
  std::size_t size = 16;
  while (size < entries.size() * 2) size *= 2;
  slots_.assign(size, 0);
  mask_ = size - 1;
  for (uint32_t i = 0; i < entries.size(); ++i) {
    uint64_t slot = hash(entries[i].key) & mask_;
    while (slots_[slot] != 0) slot = (slot + 1) & mask_;
    slots_[slot] = i + 1;
  }
}

template <typename Entry, typename Visit>
void ElementLedger::KeyIndex::forEach(std::vector<Entry>& entries, const PackedKey& key,
                                      Visit visit) const {
  if (slots_.empty()) return;
  for (uint64_t slot = hash(key) & mask_; slots_[slot] != 0; slot = (slot + 1) & mask_) {
    Entry& entry = entries[slots_[slot] - 1];
    if (entry.key == key) visit(entry);
  }
}

ElementLedger::PackedKey ElementLedger::keyOf(const Forward& forward) {
  PackedKey key{head(forward.family(), static_cast<uint8_t>(forward.protocol),
                     forward.hostIp.has_value(), forward.hostPort)};
  if (forward.hostIp) std::tie(key.high, key.low) = addressWords(*forward.hostIp);
  return key;
}

ElementLedger::PackedKey ElementLedger::keyOf(const Masquerade& masquerade) {
  PackedKey key{head(masquerade.family(), static_cast<uint8_t>(masquerade.scope), true, 0)};
  std::tie(key.high, key.low) = addressWords(masquerade.podIp);
  return key;
}

Forward ElementLedger::forwardOf(const ForwardEntry& entry) {
  const auto family = static_cast<Family>(entry.key.head >> 32 & 0xff);
  Forward forward{static_cast<Protocol>(entry.key.head >> 24 & 0xff),
                  std::nullopt,
                  static_cast<uint16_t>(entry.key.head & 0xffff),
                  entry.containerIp,
                  entry.containerPort,
                  {}};
  if (entry.key.head >> 16 & 1)
    forward.hostIp = addressOfWords(family, entry.key.high, entry.key.low);
  return forward;
}

std::optional<Masquerade> ElementLedger::masqueradeOf(const PackedKey& key) {
  const auto family = static_cast<Family>(key.head >> 32 & 0xff);
  auto podIp = addressOfWords(family, key.high, key.low);
  if (!podIp) return std::nullopt;
  return Masquerade{*podIp, static_cast<MasqueradeScope>(key.head >> 24 & 0xff)};
}

void ElementLedger::expect(uint32_t attachment, const AttachmentRules& rules) {
  sealed_ = false;
  byOwner_.clear();
  const auto position = static_cast<uint32_t>(attachments_.size());
  attachments_.push_back({attachment, owners_.size(), rules.owner.size(), subnetRefs_.size(),
                          rules.podSubnets.size()});
  owners_ += rules.owner;
  for (const IpPrefix& subnet : rules.podSubnets) {
    auto known = std::ranges::find(subnets_, subnet);
    const auto index = static_cast<uint32_t>(known - subnets_.begin());
    if (known == subnets_.end()) subnets_.push_back(subnet);
    subnetRefs_.push_back(index);
  }
  const uint64_t owner = ownerHash(rules.owner);
  for (const Forward& forward : rules.forwards) {
    forwards_.push_back(
        {keyOf(forward), forward.containerIp, forward.containerPort, position, owner});
  }
  for (const Masquerade& masquerade : rules.masquerades) {
    masquerades_.push_back({keyOf(masquerade), position, owner});
  }
}

void ElementLedger::tolerate(std::string_view owner) {
  sealed_ = false;
  tolerated_.emplace_back(owner);
}

void ElementLedger::seal() {
  if (sealed_) return;
  forwardIndex_.build(forwards_);
  masqueradeIndex_.build(masquerades_);
  std::ranges::sort(tolerated_);
  tolerated_.erase(std::ranges::unique(tolerated_).begin(), tolerated_.end());
  sealed_ = true;
}

std::string_view ElementLedger::ownerOf(const Attachment& attachment) const {
  return std::string_view(owners_).substr(attachment.ownerAt, attachment.ownerSize);
}

bool ElementLedger::tolerated(std::string_view owner) const {
  return std::ranges::binary_search(tolerated_, owner);
}

AttachmentRules& ElementLedger::unexpectedOf(std::string_view owner) {
  auto found = unexpected_.find(owner);
  if (found == unexpected_.end()) {
    found = unexpected_.emplace(std::string(owner), AttachmentRules{std::string(owner), {}, {}, {}})
                .first;
  }
  return found->second;
}

std::optional<uint32_t> ElementLedger::attachmentOf(std::string_view owner) const {
  if (byOwner_.empty()) {
    byOwner_.reserve(attachments_.size());
    for (const Attachment& attachment : attachments_) {
      byOwner_.emplace(ownerOf(attachment), attachment.number);
    }
  }
  const auto found = byOwner_.find(owner);
  if (found == byOwner_.end()) return std::nullopt;
  return found->second;
}

std::string_view ElementLedger::ownerOf(uint32_t attachment) const {
  if (byNumber_.empty()) {
    byNumber_.resize(attachments_.size());
    std::iota(byNumber_.begin(), byNumber_.end(), 0u);
    std::ranges::sort(byNumber_, {}, [&](uint32_t at) { return attachments_[at].number; });
  }
  const auto found = std::ranges::lower_bound(byNumber_, attachment, {},
                                              [&](uint32_t at) { return attachments_[at].number; });
  if (found == byNumber_.end() || attachments_[*found].number != attachment) return {};
  return ownerOf(attachments_[*found]);
}

void ElementLedger::forward(std::string_view owner, const Forward& forward,
                            std::optional<uint64_t> ruleHandle) {
  seal();
  if (!ruleHandle) {
    const uint64_t tag = ownerHash(owner);
    bool expected = false;
    forwardIndex_.forEach(forwards_, keyOf(forward), [&](ForwardEntry& entry) {
      if (expected || entry.found || entry.ownerHash != tag ||
          entry.containerIp != forward.containerIp ||
          entry.containerPort != forward.containerPort) {
        return;
      }
      entry.found = expected = true;
    });
    if (expected) return;
  }
  // Rules of the conditional chain are never expected here: their attachments are compared by
  // listing them, and tolerated.
  if (!tolerated(owner)) unexpectedOf(owner).forwards.push_back(forward);
}

void ElementLedger::masquerade(std::string_view owner, const Masquerade& masquerade) {
  seal();
  const PackedKey key = keyOf(masquerade);
  const uint64_t tag = ownerHash(owner);
  bool theirs = false;
  masqueradeIndex_.forEach(masquerades_, key, [&](MasqueradeEntry& entry) {
    theirs = theirs || entry.ownerHash == tag;
  });
  if (theirs) {
    masqueradeIndex_.forEach(masquerades_, key, [](MasqueradeEntry& entry) { entry.found = true; });
    return;
  }
  if (!tolerated(owner)) unexpectedOf(owner).masquerades.push_back(masquerade);
}

void ElementLedger::podSubnet(const IpPrefix& subnet) { podSubnets_.push_back(subnet); }

std::vector<ElementLedger::Missing> ElementLedger::missing(
    const std::vector<IpPrefix>& podSubnets) const {
  // Counted per attachment position, then described: the first missing piece of an attachment
  // is its first forward, masquerade or subnet in that order, as RulesDiff says it.
  struct Tally {
    std::size_t count = 0;
    std::string first;
  };
  std::vector<Tally> tallies(attachments_.size());
  const auto note = [&](uint32_t position, const auto& describeIt) {
    Tally& tally = tallies[position];
    if (tally.count++ == 0) tally.first = describeIt();
  };
  for (const ForwardEntry& entry : forwards_) {
    if (entry.found) continue;
    note(entry.attachment, [&] { return "forward " + describe(forwardOf(entry)); });
  }
  for (const MasqueradeEntry& entry : masquerades_) {
    if (entry.found) continue;
    note(entry.attachment, [&] {
      const auto masquerade = masqueradeOf(entry.key);
      return "masquerade " + (masquerade ? describe(*masquerade) : std::string("?"));
    });
  }
  // Each planned subnet is judged once, however many attachments plan it.
  std::vector<bool> covered;
  for (const IpPrefix& planned : subnets_) {
    covered.push_back(std::ranges::any_of(
        podSubnets, [&](const IpPrefix& have) { return have.overlaps(planned); }));
  }
  std::vector<Missing> missing;
  for (std::size_t i = 0; i < attachments_.size(); ++i) {
    const Attachment& attachment = attachments_[i];
    for (std::size_t j = 0; j < attachment.subnetCount; ++j) {
      const uint32_t subnet = subnetRefs_[attachment.subnetsAt + j];
      if (covered[subnet]) continue;
      if (tallies[i].count++ == 0) tallies[i].first = "pod subnet " + subnets_[subnet].str();
    }
    if (tallies[i].count > 0) {
      missing.push_back({attachment.number, tallies[i].count, std::move(tallies[i].first)});
    }
  }
  return missing;
}

}  // namespace hostport::nft
