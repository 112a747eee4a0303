// hostport-bench-set-dump: the kernel's share of a reconciler compare. Dumps each of our maps and
// sets (table ip hostport) over netlink, as the reconciler's read does, but parses nothing: what
// it times is the kernel walking its hash sets and filling the dump messages, the floor under any
// compare that reads the table. Each dump message resumes the kernel's walk from the start of the
// set (nft_rhash_walk skips what earlier messages carried), so a set of N elements costs
// O(N^2 / elements-per-message): the element's size, most of it the owner comment, sets the slope.
//
//   --netns PATH [--samples 5]
//
// Prints one JSON object: {"sets": {"<set>": {"elements": n, "messages": m, "bytes": b,
// "ms": {summary}}}, "totalMs": {summary of the sum over the sets, per sample}}.

#include <linux/netlink.h>

#include <cerrno>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "netlink/socket.h"
#include "nft/element_messages.h"
#include "nft/table_layout.h"

namespace hostport::bench {
namespace {

struct DumpCount {
  long messages = 0;
  long bytes = 0;
  long elements = 0;
};

int run(int argc, char** argv) {
  const Args args(argc, argv);
  if (!args.has("netns")) die("usage: hostport-bench-set-dump --netns PATH [--samples 5]");
  joinNetnsOrDie(args.get("netns"));
  const long samples = args.getLong("samples", 5);
  auto socket = netlink::NetlinkSocket::open(NETLINK_NETFILTER);
  if (!socket) die("cannot open a netfilter socket: " + socket.error().message);

  nlohmann::json sets = nlohmann::json::object();
  std::vector<double> totals(static_cast<std::size_t>(samples), 0.0);
  for (const std::string_view set : {nft::kPortsMap, nft::kSnatPodsSet}) {
    std::vector<double> times;
    DumpCount count;
    for (long sample = 0; sample < samples; ++sample) {
      count = {};
      auto request = nft::elementDumpRequest(Family::kIPv4, set);
      const auto started = Clock::now();
      auto dumped =
          socket->requestAccepting(request, "dumping set " + std::string(set), {ENOENT},
                                   [&](std::span<const std::byte> message) -> Result<void> {
                                     ++count.messages;
                                     count.bytes += static_cast<long>(message.size());
                                     // Counting elements is the one parse: the message's list, not
                                     // the elements' fields.
                                     std::vector<nft::SetElement> elements;
                                     HOSTPORT_TRY_VOID(nft::parseElementReply(message, elements));
                                     count.elements += static_cast<long>(elements.size());
                                     return {};
                                   });
      const double ms = msSince(started);
      if (!dumped) die("dumping " + std::string(set) + ": " + dumped.error().message);
      times.push_back(ms);
      totals[static_cast<std::size_t>(sample)] += ms;
    }
    sets[std::string(set)] = {{"elements", count.elements},
                              {"messages", count.messages},
                              {"bytes", count.bytes},
                              {"ms", nlohmann::json::parse(summaryJson(times))}};
  }
  std::cout << nlohmann::json{{"sets", sets},
                              {"totalMs", nlohmann::json::parse(summaryJson(totals))}}
                   .dump()
            << "\n";
  return 0;
}

}  // namespace
}  // namespace hostport::bench

int main(int argc, char** argv) { return hostport::bench::run(argc, argv); }
