#include "nft/table_layout.h"

namespace hostport::nft {

std::string_view nftFamily(Family family) { return family == Family::kIPv4 ? "ip" : "ip6"; }

std::string tableLayoutCommands(Family family) {
  const std::string f(nftFamily(family));
  const std::string a = family == Family::kIPv4 ? "ipv4_addr" : "ipv6_addr";
  const std::string t = f + " " + std::string(kTableName);
  const std::string ports(kPortsMap), ipports(kHostIpPortsMap), snatPods(kSnatPodsSet),
      masqAll(kMasqAllSet), podnets(kPodSubnetsSet), cond(kConditionalChain);
  std::string out;
  const auto line = [&out](const std::string& text) { out += text + "\n"; };
  line("add table " + t);
  line("add map " + t + " " + ports + " { type inet_proto . inet_service : " + a +
       " . inet_service; }");
  line("add map " + t + " " + ipports + " { type " + a + " . inet_proto . inet_service : " + a +
       " . inet_service; }");
  line("add set " + t + " " + snatPods + " { type " + a + "; }");
  line("add set " + t + " " + masqAll + " { type " + a + "; }");
  line("add set " + t + " " + podnets + " { type " + a + " . " + a + "; flags interval; }");
  line("add chain " + t + " " + cond);
  line("add chain " + t + " hostports");
  line("add chain " + t +
       " prerouting { type nat hook prerouting priority dstnat; policy accept; }");
  // nft 1.0.6 refuses the `dstnat` keyword on the output hook of the ip family, hence -100.
  line("add chain " + t + " output { type nat hook output priority -100; policy accept; }");
  line("add chain " + t +
       " postrouting { type nat hook postrouting priority srcnat; policy accept; }");
  for (const char* chain : {"hostports", "prerouting", "output", "postrouting"}) {
    line("flush chain " + t + " " + chain);
  }
  line("add rule " + t + " hostports jump " + cond);
  line("add rule " + t + " hostports dnat " + f + " to " + f +
       " daddr . meta l4proto . th dport map @" + ipports);
  line("add rule " + t + " hostports dnat " + f + " to meta l4proto . th dport map @" + ports);
  // Only traffic addressed to this node is ours: the lesson of portmap's CVE-2025-67499.
  line("add rule " + t + " prerouting fib daddr type local jump hostports");
  line("add rule " + t + " output fib daddr type local jump hostports");
  const std::string dnatTo = "add rule " + t + " postrouting ct status dnat " + f + " daddr @";
  line(dnatTo + masqAll + " masquerade");
  // Hairpin and same-bridge peers, whose replies would otherwise bypass the host: the source and
  // the pod share one of the pod subnets.
  line(dnatTo + snatPods + " " + f + " saddr . " + f + " daddr @" + podnets + " masquerade");
  // 127.0.0.1 cannot leave the node (route_localnet lets it be forwarded). IPv6 has no such
  // route, so ::1 is never forwarded.
  if (family == Family::kIPv4) line(dnatTo + snatPods + " ip saddr 127.0.0.0/8 masquerade");
  return out;
}

}  // namespace hostport::nft
