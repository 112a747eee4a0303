// hostport-agent: owns this node's port pools. Wiring only: config, store, allocator, service,
// socket. Everything it wires is a library with its own tests.

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "agent/config/agent_config.h"
#include "agent/server/unix_http_server.h"
#include "agent/service/agent_service.h"
#include "agent/service/api_handlers.h"
#include "agent/service/socket_probe.h"
#include "agent/service/table_repair.h"
#include "agent/store/lease_store.h"
#include "hostnet/reserved_ports.h"

namespace {

using namespace hostport;
using namespace hostport::agent;

struct Flags {
  std::string configPath;
  std::string portRange;
  std::string stateDir;
  std::string socketPath;
  std::string logLevel;
  bool noReservedPorts = false;
  std::optional<uint32_t> tableRepairSeconds;
};

Result<AgentConfig> resolveConfig(const Flags& flags) {
  AgentConfig config;
  if (!flags.configPath.empty()) {
    std::ifstream file(flags.configPath);
    if (!file) {
      return fail(ErrorCode::kInvalidArgument, "--config: cannot read " + flags.configPath);
    }
    std::stringstream text;
    text << file.rdbuf();
    if (auto applied = applyYamlConfig(text.str(), flags.configPath, config); !applied) {
      return std::unexpected(applied.error());
    }
  }
  if (!flags.portRange.empty()) {
    auto ranges = parsePortRanges(flags.portRange);
    if (!ranges) return withContext(ranges.error(), "--port-range");
    setDefaultPoolRanges(config, std::move(*ranges));
  }
  if (!flags.stateDir.empty()) config.stateDir = flags.stateDir;
  if (!flags.socketPath.empty()) config.socketPath = flags.socketPath;
  if (!flags.logLevel.empty()) config.logLevel = flags.logLevel;
  if (flags.noReservedPorts) config.reserveLocalPorts = false;
  if (flags.tableRepairSeconds) config.tableRepairSeconds = *flags.tableRepairSeconds;
  if (auto checked = finalizeConfig(config); !checked) return std::unexpected(checked.error());
  return config;
}

std::string describePools(const std::vector<PoolSpec>& pools) {
  std::string out;
  for (const auto& pool : pools) {
    if (!out.empty()) out += "; ";
    out += pool.name + "=";
    for (std::size_t i = 0; i < pool.ranges.size(); ++i) {
      out += (i ? "," : "") + pool.ranges[i].str();
    }
    out += " (" + std::string(strategyName(pool.strategy)) + ")";
  }
  return out;
}

// Reads the leases back into a new allocator, which keeps them packed. The decoded leases
// (~25 MB at 50,000) live only in this function, so they are freed before the agent serves.
std::optional<Allocator> recoverAllocator(store::LeaseStore& store, const AgentConfig& config) {
  auto leases = store.recover();
  if (!leases) {
    spdlog::error("cannot recover leases: {}", leases.error().message);
    return std::nullopt;
  }
  std::random_device seed;
  auto allocator =
      Allocator::create(config.pools, [rng = std::mt19937_64(seed())]() mutable { return rng(); });
  if (!allocator) {
    spdlog::error("invalid pools: {}", allocator.error().message);
    return std::nullopt;
  }
  allocator->reserve(leases->size());
  for (const auto& lease : *leases) {
    if (auto restored = allocator->restore(lease); !restored) {
      // Losing track of a lease could hand its ports out twice: refuse to serve instead.
      spdlog::error("cannot restore lease {}: {}", lease.key.str(), restored.error().message);
      return std::nullopt;
    }
  }
  return std::move(*allocator);
}

// The heap while recovery runs. glibc keeps freed memory for reuse, and the decoded leases
// (~250,000 small strings at 50,000 leases) sat below the allocator's packed ones, out of reach
// of its trimming at the top of the heap: malloc_trim() hands their pages back to the kernel at
// the end. Fastbins are off meanwhile, so those strings coalesce as they are freed instead of
// all at once inside malloc_trim() (free and trim: 27 -> 16 ms at 50,000 leases).
class RecoveryHeap {
 public:
  RecoveryHeap() {
#ifdef __GLIBC__
    mallopt(M_MXFAST, 0);
#endif
  }
  ~RecoveryHeap() {
#ifdef __GLIBC__
    malloc_trim(0);
    mallopt(M_MXFAST, 64 * sizeof(std::size_t) / 4);  // glibc's default
#endif
  }
  RecoveryHeap(const RecoveryHeap&) = delete;
  RecoveryHeap& operator=(const RecoveryHeap&) = delete;
};

int run(const AgentConfig& config) {
  const auto started = std::chrono::steady_clock::now();
  auto store = store::LeaseStore::open(config.stateDir);
  if (!store) {
    spdlog::error("cannot open state dir: {}", store.error().message);
    return 1;
  }
  std::optional<Allocator> allocator;
  {
    const RecoveryHeap heap;
    allocator = recoverAllocator(**store, config);
  }
  if (!allocator) return 1;
  const auto recoveredIn = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  spdlog::info("recovered {} leases from {} in {} ms", allocator->leaseCount(), config.stateDir,
               recoveredIn.count());

  if (config.reserveLocalPorts) {
    std::vector<std::pair<uint16_t, uint16_t>> ranges;
    for (const auto& pool : config.pools) {
      for (const auto& range : pool.ranges) ranges.emplace_back(range.first, range.last);
    }
    if (auto reserved = hostnet::reserveLocalPorts(ranges); !reserved) {
      spdlog::error("cannot reserve pool ports from ephemeral use: {}", reserved.error().message);
      return 1;
    }
    spdlog::info("pool ranges added to net.ipv4.ip_local_reserved_ports");
  }

  auto probes = SocketProbeFactory::create(config.pools);
  if (!probes) {
    spdlog::error("cannot read the host's sockets: {}", probes.error().message);
    return 1;
  }
  Metrics metrics;
  AgentService service(std::move(*allocator), **store, std::move(*probes), metrics,
                       ServiceOptions{config.compactAfterJournalBytes});
  std::atomic<bool> ready{false};
  Router router;
  registerApiHandlers(router, service, metrics, ready);

  boost::asio::io_context io(1);
  auto server = UnixHttpServer::listen(io, config.socketPath, 0600, router, ServerLimits{});
  if (!server) {
    spdlog::error("{}", server.error().message);
    return 1;
  }
  std::unique_ptr<TableRepair> tableRepair;
  if (config.tableRepairSeconds > 0) {
    tableRepair = TableRepair::start(io, std::chrono::seconds(config.tableRepairSeconds));
  }
  ready = true;
  spdlog::info("serving {} with pools {}", config.socketPath, describePools(config.pools));

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&io](const boost::system::error_code&, int signal) {
    spdlog::info("signal {}: shutting down", signal);
    io.stop();
  });
  io.run();
  ready = false;
  // Drain the journal while the service its callbacks call into is still alive.
  server->reset();
  store->reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hostport-agent: owns this node's host-port pools, allocates ports durably, checks them "
      "against live host sockets, and serves the hostport CNI plugin and hostportctl on a Unix "
      "socket.",
      "hostport-agent"};
  Flags flags;
  app.add_option("-c,--config", flags.configPath, "YAML config file (see docs/design.md)");
  app.add_option("--port-range,--hostport-range", flags.portRange,
                 "ranges of the default pool, e.g. 30000-32767 or 20000-20999,22000-22999 "
                 "(default 30000-32767)");
  app.add_option("--state-dir", flags.stateDir,
                 "where the lease journal and snapshot live (default /var/lib/hostport)");
  app.add_option("--socket", flags.socketPath,
                 "control socket path, mode 0600 (default /run/hostport/agent.sock)");
  app.add_option("--log-level", flags.logLevel, "trace, debug, info (default), warn or error");
  app.add_option("--table-repair-interval", flags.tableRepairSeconds,
                 "seconds between checks of table ip/ip6 hostport's fixed chains, which are laid "
                 "out again when someone edited them; 0: never touch nftables (default 30)")
      ->check(CLI::Range(0, 86400));
  app.add_flag("--no-reserve-local-ports", flags.noReservedPorts,
               "leave net.ipv4.ip_local_reserved_ports alone");
  CLI11_PARSE(app, argc, argv);

  spdlog::set_default_logger(spdlog::stderr_logger_mt("hostport-agent"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %l hostport-agent: %v");
  auto config = resolveConfig(flags);
  if (!config) {
    spdlog::error("invalid configuration: {}", config.error().message);
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(config->logLevel));
  return run(*config);
}
