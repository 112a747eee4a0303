// The agent's configuration (agent/config/agent_config.h): YAML keys, port range lists, the
// default pool and the checks finalizeConfig makes, and YAML that is hostile rather than wrong.

#include "agent/config/agent_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "hostnet/proc_sys_net.h"
#include "tests/support/temp_dir.h"

namespace hostport::agent::config {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

PortRange range(uint16_t first, uint16_t last) { return PortRange{first, last}; }

/// applyYamlConfig on a fresh default config, from a file called config.yaml.
Result<AgentConfig> load(std::string_view yaml) {
  AgentConfig config;
  HOSTPORT_TRY_VOID(applyYamlConfig(yaml, "config.yaml", config));
  return config;
}

/// load() then finalizeConfig().
Result<AgentConfig> loadFinal(std::string_view yaml) {
  HOSTPORT_TRY(AgentConfig config, load(yaml));
  HOSTPORT_TRY_VOID(finalizeConfig(config));
  return config;
}

/// The error message of a load that must fail with kInvalidArgument.
std::string loadError(std::string_view yaml) {
  auto config = load(yaml);
  EXPECT_FALSE(config.has_value()) << "expected an error for:\n" << yaml;
  if (config) return "";
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument) << config.error().message;
  return config.error().message;
}

std::string finalError(std::string_view yaml) {
  auto config = loadFinal(yaml);
  EXPECT_FALSE(config.has_value()) << "expected an error for:\n" << yaml;
  if (config) return "";
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument) << config.error().message;
  return config.error().message;
}

const core::PoolSpec* findPool(const AgentConfig& config, std::string_view name) {
  for (const auto& pool : config.pools) {
    if (pool.name == name) return &pool;
  }
  return nullptr;
}

// --- defaults and the happy path --------------------------------------------------------

TEST(AgentConfigTest, DefaultsAreDocumented) {
  AgentConfig config;
  EXPECT_EQ(config.stateDir, "/var/lib/hostport");
  EXPECT_EQ(config.socketPath, "/run/hostport/agent.sock");
  EXPECT_TRUE(config.reserveLocalPorts);
  EXPECT_EQ(config.logLevel, "info");
  EXPECT_EQ(config.compactAfterJournalBytes, uint64_t{8} << 20);
  EXPECT_FALSE(config.allowEmptyGc);
  EXPECT_EQ(config.emptyGcMaxLeases, 0u);
  EXPECT_EQ(config.procSysNet, "/proc/sys/net");
  EXPECT_EQ(kDefaultProcSysNet, hostnet::kDefaultProcSysNet) << "the agent and hostnet disagree";
  EXPECT_TRUE(config.pools.empty());
}

TEST(AgentConfigTest, FinalizeAddsTheDefaultPool) {
  AgentConfig config;
  ASSERT_TRUE(finalizeConfig(config).has_value());
  ASSERT_EQ(config.pools.size(), 1u);
  EXPECT_EQ(config.pools[0].name, "default");
  EXPECT_EQ(config.pools[0].ranges, std::vector<PortRange>{range(30000, 32767)});
  EXPECT_TRUE(config.pools[0].protocols.empty());
  EXPECT_EQ(config.pools[0].strategy, core::Strategy::kLowest);
  EXPECT_EQ(config.pools[0].reuseDelaySeconds, 30u);
}

TEST(AgentConfigTest, EveryKeyIsRead) {
  auto config = loadFinal(R"(
stateDir: /srv/hostport/state
socket: /run/hp/agent.sock
reserveLocalPorts: false
logLevel: debug
compactAfterJournalBytes: 65536
pools:
  default:
    ranges: ["30000-30999"]
  games:
    ranges: ["7000-7099", "7200"]
    protocols: [udp, tcpudp]
    strategy: round-robin
    reuseDelaySeconds: 120
  media:
    ranges: [20000-20999]
    protocols: [UDP]
    strategy: random
  grpc:
    ranges: ["40000-40009"]
    protocols: [tcp, sctp]
    strategy: lowest
)");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->stateDir, "/srv/hostport/state");
  EXPECT_EQ(config->socketPath, "/run/hp/agent.sock");
  EXPECT_FALSE(config->reserveLocalPorts);
  EXPECT_EQ(config->logLevel, "debug");
  EXPECT_EQ(config->compactAfterJournalBytes, 65536u);
  ASSERT_EQ(config->pools.size(), 4u);
  // Pools keep the file's order.
  EXPECT_EQ(config->pools[0].name, "default");
  EXPECT_EQ(config->pools[1].name, "games");
  EXPECT_EQ(config->pools[2].name, "media");
  EXPECT_EQ(config->pools[3].name, "grpc");

  const core::PoolSpec& games = config->pools[1];
  EXPECT_EQ(games.ranges, (std::vector<PortRange>{range(7000, 7099), range(7200, 7200)}));
  EXPECT_EQ(games.protocols,
            (std::vector<PortProtocol>{PortProtocol::kUdp, PortProtocol::kTcpUdp}));
  EXPECT_EQ(games.strategy, core::Strategy::kRoundRobin);
  EXPECT_EQ(games.reuseDelaySeconds, 120u);
  const core::PoolSpec& media = config->pools[2];
  EXPECT_EQ(media.ranges, std::vector<PortRange>{range(20000, 20999)});
  EXPECT_EQ(media.protocols, std::vector<PortProtocol>{PortProtocol::kUdp});
  EXPECT_EQ(media.strategy, core::Strategy::kRandom);
  const core::PoolSpec& grpc = config->pools[3];
  EXPECT_EQ(grpc.protocols, (std::vector<PortProtocol>{PortProtocol::kTcp, PortProtocol::kSctp}));
  EXPECT_EQ(grpc.strategy, core::Strategy::kLowest);
}

TEST(AgentConfigTest, TextKeepsWhatItDoesNotSet) {
  AgentConfig config;
  config.stateDir = "/from/flags";
  config.pools.push_back({"default", {range(1000, 1009)}, {}, core::Strategy::kRandom});
  ASSERT_TRUE(applyYamlConfig("logLevel: warn\n", "x.yaml", config).has_value());
  EXPECT_EQ(config.stateDir, "/from/flags");
  EXPECT_EQ(config.logLevel, "warn");
  ASSERT_EQ(config.pools.size(), 1u);
  EXPECT_EQ(config.pools[0].strategy, core::Strategy::kRandom);
}

TEST(AgentConfigTest, PoolsReplaceEarlierPools) {
  AgentConfig config;
  config.pools.push_back({"old", {range(1000, 1009)}, {}, core::Strategy::kLowest});
  ASSERT_TRUE(applyYamlConfig("pools:\n  fresh:\n    ranges: ['2000']\n", "x", config));
  ASSERT_EQ(config.pools.size(), 1u);
  EXPECT_EQ(config.pools[0].name, "fresh");
}

TEST(AgentConfigTest, EmptyDocumentsChangeNothing) {
  for (const char* text : {"", "\n", "# only a comment\n", "~\n", "null", "---\n", "---\n...\n"}) {
    auto config = load(text);
    ASSERT_TRUE(config.has_value()) << "'" << text << "': " << config.error().message;
    EXPECT_EQ(config->stateDir, "/var/lib/hostport") << text;
    EXPECT_TRUE(config->pools.empty()) << text;
  }
}

TEST(AgentConfigTest, PoolDefaultsAreAllProtocolsAndLowest) {
  auto config = load("pools:\n  default:\n    ranges: ['31000-31009']\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->pools.size(), 1u);
  EXPECT_TRUE(config->pools[0].protocols.empty());
  EXPECT_EQ(config->pools[0].strategy, core::Strategy::kLowest);
  EXPECT_EQ(config->pools[0].reuseDelaySeconds, core::kDefaultReuseDelaySeconds);
}

TEST(AgentConfigTest, ReuseDelaySecondsIsBoundedAndZeroTurnsQuarantineOff) {
  const auto delayOf = [](const char* value) -> uint32_t {
    auto config = load(std::string("pools:\n  games:\n    ranges: ['7000']\n"
                                   "    reuseDelaySeconds: ") +
                       value + "\n");
    EXPECT_TRUE(config.has_value()) << value;
    return config ? config->pools.at(0).reuseDelaySeconds : 99999;
  };
  EXPECT_EQ(delayOf("0"), 0u);
  EXPECT_EQ(delayOf("5"), 5u);
  EXPECT_EQ(delayOf("3600"), 3600u);
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: ['7000']\n    reuseDelaySeconds: 3601\n"),
            "config.yaml: pools.games.reuseDelaySeconds: \"3601\" is above 3600");
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: ['7000']\n    reuseDelaySeconds: 30s\n"),
            "config.yaml: pools.games.reuseDelaySeconds: \"30s\" is not a whole number");
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: ['7000']\n    reuseDelaySeconds: -1\n"),
            "config.yaml: pools.games.reuseDelaySeconds: \"-1\" is not a whole number");
}

TEST(AgentConfigTest, EmptyPoolsMappingFallsBackToTheDefaultPool) {
  auto config = loadFinal("pools: {}\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->pools.size(), 1u);
  EXPECT_EQ(config->pools[0].name, "default");
}

TEST(AgentConfigTest, ExplicitDefaultPoolIsKept) {
  auto config = loadFinal("pools:\n  default:\n    ranges: ['40000-40099']\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->pools.size(), 1u);
  EXPECT_EQ(config->pools[0].ranges, std::vector<PortRange>{range(40000, 40099)});
}

TEST(AgentConfigTest, ConfiguredPoolsGetNoImplicitDefaultPool) {
  auto config = loadFinal("pools:\n  games:\n    ranges: ['7000-7099']\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  ASSERT_EQ(config->pools.size(), 1u);
  EXPECT_EQ(findPool(*config, "default"), nullptr);
}

TEST(AgentConfigTest, ANamedPoolMayUseTheBuiltInDefaultRange) {
  // The built-in default pool exists only when no pool is configured, so it cannot overlap.
  auto config = loadFinal("pools:\n  games:\n    ranges: ['30000-30099']\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->pools.size(), 1u);
}

TEST(AgentConfigTest, RefusesPoolNamesTheAnnotationCannotSelect) {
  EXPECT_THAT(loadError("pools:\n  a-:\n    ranges: ['7000-7001']\n"), HasSubstr("pools.a-"));
}

TEST(AgentConfigTest, RefusesATinyCompactionThreshold) {
  EXPECT_THAT(loadError("compactAfterJournalBytes: 0\n"), HasSubstr("compactAfterJournalBytes"));
}

TEST(AgentConfigTest, QuotedAndPlainScalarsAreTheSame) {
  auto plain = load("logLevel: error\ncompactAfterJournalBytes: 8192\n");
  auto quoted = load("logLevel: 'error'\ncompactAfterJournalBytes: \"8192\"\n");
  ASSERT_TRUE(plain && quoted);
  EXPECT_EQ(plain->logLevel, quoted->logLevel);
  EXPECT_EQ(plain->compactAfterJournalBytes, quoted->compactAfterJournalBytes);
}

TEST(AgentConfigTest, FlowStyleWorks) {
  auto config =
      loadFinal("{stateDir: /s, pools: {default: {ranges: [30000-30009], strategy: random}}}");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->stateDir, "/s");
  EXPECT_EQ(config->pools.at(0).strategy, core::Strategy::kRandom);
}

// --- errors name the key path and the value ---------------------------------------------

TEST(AgentConfigTest, UnknownKeysAreErrorsNamingTheirPath) {
  EXPECT_EQ(loadError("stateDirectory: /x\n"), "config.yaml: stateDirectory: unknown key");
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: ['7000']\n    stratgy: random\n"),
            "config.yaml: pools.games.stratgy: unknown key");
  // Keys are case-sensitive: a YAML key spelled differently is a typo, not a synonym.
  EXPECT_EQ(loadError("StateDir: /x\n"), "config.yaml: StateDir: unknown key");
}

TEST(AgentConfigTest, SourceNameLeadsEveryError) {
  AgentConfig config;
  auto applied = applyYamlConfig("bogus: 1\n", "/etc/hostport/agent.yaml", config);
  ASSERT_FALSE(applied.has_value());
  EXPECT_EQ(applied.error().message, "/etc/hostport/agent.yaml: bogus: unknown key");
}

TEST(AgentConfigTest, TopLevelMustBeAMapping) {
  EXPECT_EQ(loadError("- a\n- b\n"), "config.yaml: (top level): must be a mapping");
  EXPECT_EQ(loadError("just a string\n"), "config.yaml: (top level): must be a mapping");
}

TEST(AgentConfigTest, StringKeysRejectOtherTypes) {
  EXPECT_EQ(loadError("stateDir: [a, b]\n"), "config.yaml: stateDir: must be a string");
  EXPECT_EQ(loadError("socket: {a: b}\n"), "config.yaml: socket: must be a string");
  EXPECT_EQ(loadError("logLevel:\n"), "config.yaml: logLevel: must be a string");
  EXPECT_EQ(loadError("logLevel: ~\n"), "config.yaml: logLevel: must be a string");
}

TEST(AgentConfigTest, BooleansAreTrueOrFalseOnly) {
  EXPECT_TRUE(load("reserveLocalPorts: true\n")->reserveLocalPorts);
  EXPECT_FALSE(load("reserveLocalPorts: false\n")->reserveLocalPorts);
  for (const char* value : {"yes", "no", "on", "True", "1", "0", "'y'"}) {
    const auto message = loadError(std::string("reserveLocalPorts: ") + value + "\n");
    EXPECT_THAT(message, AllOf(HasSubstr("config.yaml: reserveLocalPorts: "),
                               HasSubstr("is not true or false")))
        << value;
  }
  EXPECT_EQ(loadError("reserveLocalPorts: yes\n"),
            "config.yaml: reserveLocalPorts: \"yes\" is not true or false");
  EXPECT_EQ(loadError("reserveLocalPorts: [true]\n"),
            "config.yaml: reserveLocalPorts: must be a string");
}

TEST(AgentConfigTest, CountsAreDecimalDigitsWithinBounds) {
  EXPECT_EQ(load("compactAfterJournalBytes: 999999999999\n")->compactAfterJournalBytes,
            999999999999u);
  for (const char* value : {"-1", "1e6", "0x10", "8MiB", "1.5", "''", " +5", "9999999999999999"}) {
    const auto message = loadError(std::string("compactAfterJournalBytes: ") + value + "\n");
    EXPECT_THAT(message, AllOf(HasSubstr("config.yaml: compactAfterJournalBytes: "),
                               HasSubstr("is not a whole number")))
        << value;
  }
  EXPECT_EQ(loadError("compactAfterJournalBytes: 8MiB\n"),
            "config.yaml: compactAfterJournalBytes: \"8MiB\" is not a whole number");
  EXPECT_EQ(loadError("compactAfterJournalBytes: 2000000000000\n"),
            "config.yaml: compactAfterJournalBytes: \"2000000000000\" is above 1099511627776");
}

TEST(AgentConfigTest, TableRepairSecondsDefaultsTo30AndZeroTurnsItOff) {
  EXPECT_EQ(load("logLevel: info\n")->tableRepairSeconds, 30u);
  EXPECT_EQ(load("tableRepairSeconds: 0\n")->tableRepairSeconds, 0u);
  EXPECT_EQ(load("tableRepairSeconds: 86400\n")->tableRepairSeconds, 86400u);
  EXPECT_EQ(loadError("tableRepairSeconds: 86401\n"),
            "config.yaml: tableRepairSeconds: \"86401\" is above 86400");
  EXPECT_EQ(loadError("tableRepairSeconds: 30s\n"),
            "config.yaml: tableRepairSeconds: \"30s\" is not a whole number");
}

TEST(AgentConfigTest, EmptyGcKeysAreReadAndChecked) {
  auto config = load("allowEmptyGc: true\nemptyGcMaxLeases: 5\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_TRUE(config->allowEmptyGc);
  EXPECT_EQ(config->emptyGcMaxLeases, 5u);
  EXPECT_EQ(loadError("allowEmptyGc: yes\n"),
            "config.yaml: allowEmptyGc: \"yes\" is not true or false");
  EXPECT_EQ(loadError("emptyGcMaxLeases: -1\n"),
            "config.yaml: emptyGcMaxLeases: \"-1\" is not a whole number");
  EXPECT_EQ(loadError("emptyGcMaxLeases: 1000001\n"),
            "config.yaml: emptyGcMaxLeases: \"1000001\" is above 1000000");
}

TEST(AgentConfigTest, RepeatedKeysAreErrorsAtEveryLevel) {
  EXPECT_EQ(loadError("logLevel: info\nstateDir: /x\nlogLevel: debug\n"),
            "config.yaml: logLevel: appears more than once");
  EXPECT_EQ(loadError("pools:\n  a:\n    ranges: [\"1000-1001\"]\n  a:\n    ranges: "
                      "[\"2000-2001\"]\n"),
            "config.yaml: pools.a: appears more than once");
  EXPECT_EQ(loadError("pools:\n  a:\n    ranges: [\"1000-1001\"]\n    ranges: [\"2000\"]\n"),
            "config.yaml: pools.a.ranges: appears more than once");
}

TEST(AgentConfigTest, PoolsMustBeAMapping) {
  EXPECT_EQ(loadError("pools: [a]\n"),
            "config.yaml: pools: must be a mapping of pool name to pool");
  EXPECT_EQ(loadError("pools:\n"), "config.yaml: pools: must be a mapping of pool name to pool");
  EXPECT_EQ(loadError("pools: default\n"),
            "config.yaml: pools: must be a mapping of pool name to pool");
  EXPECT_EQ(loadError("pools:\n  games: 7000-7099\n"),
            "config.yaml: pools.games: must be a mapping");
}

TEST(AgentConfigTest, PoolNamesAreLowercaseLabels) {
  for (const char* name : {"Games", "ga_mes", "ga.mes", "-games", "gämes", "''"}) {
    const auto message = loadError(std::string("pools:\n  ") + name + ":\n    ranges: ['7000']\n");
    EXPECT_THAT(message, HasSubstr("pool names must be lowercase letters, digits and '-', start "
                                   "and end with a letter or digit, and be at most 63 characters"))
        << name;
  }
  EXPECT_EQ(loadError("pools:\n  Games:\n    ranges: ['7000']\n"),
            "config.yaml: pools.Games: pool names must be lowercase letters, digits and '-', start "
            "and end with a letter or digit, and be at most 63 characters");
  EXPECT_THAT(loadError("pools:\n  " + std::string(64, 'a') + ":\n    ranges: ['7000']\n"),
              HasSubstr("pool names must be"));
  EXPECT_TRUE(load("pools:\n  " + std::string(63, 'a') + ":\n    ranges: ['7000']\n"));
  EXPECT_TRUE(load("pools:\n  9lives:\n    ranges: ['7000']\n"));
}

TEST(AgentConfigTest, RangesMustBeANonEmptyList) {
  const std::string want =
      "config.yaml: pools.games.ranges: must be a non-empty list such as [\"30000-32767\"]";
  EXPECT_EQ(loadError("pools:\n  games:\n    strategy: random\n"), want);
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: []\n"), want);
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: 7000-7099\n"), want);
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: {a: 1}\n"), want);
  EXPECT_EQ(loadError("pools:\n  games: {}\n"), want);
}

TEST(AgentConfigTest, BadRangesNameTheirIndexAndText) {
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: ['7000', '7100-7000']\n"),
            "config.yaml: pools.games.ranges[1]: port range \"7100-7000\" is empty: its first "
            "port is above its last");
  for (const char* bad : {"0-10", "65536", "7000-70000", "abc", "7000-", "-7000", "7000--7001", "",
                          " 7000", "7000-7001-7002", "+7000", "0x1b58"}) {
    const auto message = loadError(std::string("pools:\n  games:\n    ranges: ['") + bad + "']\n");
    EXPECT_THAT(message, AllOf(HasSubstr("pools.games.ranges[0]: port range"),
                               HasSubstr(std::string("\"") + bad + "\"")))
        << bad;
  }
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: [[7000]]\n"),
            "config.yaml: pools.games.ranges[0]: must be a string");
}

TEST(AgentConfigTest, BadProtocolsNameTheirIndexAndText) {
  EXPECT_EQ(loadError("pools:\n  g:\n    ranges: ['7000']\n    protocols: [tcp, icmp]\n"),
            "config.yaml: pools.g.protocols[1]: \"icmp\" is not tcp, udp, sctp or tcpudp");
  EXPECT_EQ(loadError("pools:\n  g:\n    ranges: ['7000']\n    protocols: tcp\n"),
            "config.yaml: pools.g.protocols: must be a list");
  EXPECT_EQ(loadError("pools:\n  g:\n    ranges: ['7000']\n    protocols: [[tcp]]\n"),
            "config.yaml: pools.g.protocols[0]: must be a string");
}

TEST(AgentConfigTest, BadStrategyNamesTheChoices) {
  EXPECT_EQ(loadError("pools:\n  games:\n    ranges: ['7000']\n    strategy: fastest\n"),
            "config.yaml: pools.games.strategy: \"fastest\" is not one of lowest, random, "
            "round-robin");
  // Strategies are exact: no case folding, no synonyms.
  EXPECT_THAT(loadError("pools:\n  g:\n    ranges: ['7000']\n    strategy: Random\n"),
              HasSubstr("\"Random\" is not one of"));
  EXPECT_THAT(loadError("pools:\n  g:\n    ranges: ['7000']\n    strategy: round_robin\n"),
              HasSubstr("\"round_robin\" is not one of"));
  EXPECT_EQ(loadError("pools:\n  g:\n    ranges: ['7000']\n    strategy: [random]\n"),
            "config.yaml: pools.g.strategy: must be a string");
}

TEST(AgentConfigTest, ScopeIsNodeByDefaultOrClusterExactly) {
  const auto config = load(
      "pools:\n  games:\n    ranges: ['7000']\n    scope: cluster\n"
      "  web:\n    ranges: ['8000']\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->pools.at(0).scope, core::PoolScope::kCluster);
  EXPECT_EQ(config->pools.at(1).scope, core::PoolScope::kNode);
  EXPECT_EQ(loadError("pools:\n  g:\n    ranges: ['7000']\n    scope: Cluster\n"),
            "config.yaml: pools.g.scope: \"Cluster\" is not node or cluster");
  EXPECT_EQ(loadError("pools:\n  g:\n    ranges: ['7000']\n    scope: [cluster]\n"),
            "config.yaml: pools.g.scope: must be a string");
  EXPECT_THAT(loadError("pools:\n  default:\n    ranges: ['7000']\n    scope: cluster\n"),
              HasSubstr("pools.default.scope: the default pool serves pods that name no pool"));
}

TEST(AgentConfigTest, ValuesInMessagesAreQuotedAndCut) {
  const std::string longValue(200, 'x');
  const auto message = loadError("compactAfterJournalBytes: " + longValue + "\n");
  EXPECT_THAT(message, HasSubstr("\"" + std::string(64, 'x') + "\"..."));
  EXPECT_THAT(message, Not(HasSubstr(std::string(65, 'x'))));
  // Quotes are escaped and control characters cannot split the log line.
  const auto quoted = loadError("reserveLocalPorts: \"a\\\"b\\nc\\td\"\n");
  EXPECT_THAT(quoted, AllOf(HasSubstr("config.yaml: reserveLocalPorts: \"a\\\"b"),
                            HasSubstr("d\" is not true or false"), Not(HasSubstr("\n")),
                            Not(HasSubstr("\t"))));
}

TEST(AgentConfigTest, SyntaxErrorsSayNotValidYaml) {
  // (yaml-cpp 0.7 accepts an unterminated double-quoted scalar at the end of the input.)
  for (const char* text : {"a: [1, 2\n", "{unclosed\n", "a:\n\tb: 1\n", "a: b: c\n"}) {
    EXPECT_THAT(loadError(text), HasSubstr("config.yaml: not valid YAML: ")) << text;
  }
}

// --- finalizeConfig -----------------------------------------------------------------------

TEST(AgentConfigTest, FinalizeChecksPaths) {
  EXPECT_EQ(finalError("stateDir: relative/dir\n"),
            "stateDir: \"relative/dir\" must be an absolute path");
  EXPECT_EQ(finalError("stateDir: ''\n"), "stateDir: \"\" must be an absolute path");
  EXPECT_EQ(finalError("socket: agent.sock\n"),
            "socket: \"agent.sock\" must be an absolute path of at most 100 characters");
  EXPECT_TRUE(loadFinal("socket: /" + std::string(99, 's') + "\n"));
  EXPECT_THAT(finalError("socket: /" + std::string(100, 's') + "\n"),
              HasSubstr("at most 100 characters"));
}

TEST(AgentConfigTest, ProcSysNetIsReadAndMustBeAnAbsolutePath) {
  const auto config = loadFinal("procSysNet: /host/proc/sys/net\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->procSysNet, "/host/proc/sys/net");
  EXPECT_EQ(finalError("procSysNet: host/proc/sys/net\n"),
            "procSysNet: \"host/proc/sys/net\" must be an absolute path");
  EXPECT_EQ(finalError("procSysNet: ''\n"), "procSysNet: \"\" must be an absolute path");
  EXPECT_EQ(loadError("procSysNet: [/proc/sys/net]\n"),
            "config.yaml: procSysNet: must be a string");
}

TEST(AgentConfigTest, MetricsAddressDefaultsToLoopbackAndEmptyTurnsItOff) {
  EXPECT_EQ(AgentConfig{}.metricsAddress, "127.0.0.1:9810");
  auto v6 = loadFinal("metricsAddress: \"[::1]:9911\"\n");
  ASSERT_TRUE(v6.has_value()) << v6.error().message;
  EXPECT_EQ(v6->metricsAddress, "[::1]:9911");
  auto off = loadFinal("metricsAddress: \"\"\n");
  ASSERT_TRUE(off.has_value()) << off.error().message;
  EXPECT_EQ(off->metricsAddress, "");
}

TEST(AgentConfigTest, PodSocketDefaultsToItsOwnDirectoryAndEmptyTurnsItOff) {
  EXPECT_EQ(AgentConfig{}.podSocketPath, "/run/hostport/pod/pod.sock");
  auto moved = loadFinal("podSocket: /run/hp-pods/self.sock\n");
  ASSERT_TRUE(moved.has_value()) << moved.error().message;
  EXPECT_EQ(moved->podSocketPath, "/run/hp-pods/self.sock");
  auto off = loadFinal("podSocket: \"\"\n");
  ASSERT_TRUE(off.has_value()) << off.error().message;
  EXPECT_EQ(off->podSocketPath, "");
}

TEST(AgentConfigTest, PodSocketMayNotShareOrContainTheControlSocketsDirectory) {
  // Pods mount the pod socket's directory: the control socket must not be reachable through it.
  EXPECT_THAT(finalError("podSocket: /run/hostport/pod.sock\n"),
              HasSubstr("podSocket: \"/run/hostport/pod.sock\" is in a directory that holds the "
                        "control socket \"/run/hostport/agent.sock\""));
  EXPECT_THAT(finalError("podSocket: /run/pod.sock\n"),
              HasSubstr("podSocket: \"/run/pod.sock\" is in a directory that holds the control"));
  EXPECT_THAT(finalError("podSocket: relative/pod.sock\n"),
              HasSubstr("podSocket: \"relative/pod.sock\" must be an absolute path"));
}

TEST(AgentConfigTest, PodSocketFlagOverridesTheFile) {
  CommandLine flags;
  flags.settings["podSocket"] = "";
  auto config = resolveConfig(flags);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->podSocketPath, "");
}

TEST(AgentConfigTest, BadMetricsAddressNamesTheKeyAndTheValue) {
  EXPECT_THAT(finalError("metricsAddress: localhost:9810\n"),
              HasSubstr("metricsAddress: \"localhost:9810\" is not host:port"));
  EXPECT_THAT(finalError("metricsAddress: 127.0.0.1:0\n"),
              HasSubstr("metricsAddress: \"127.0.0.1:0\" has a port outside 1-65535"));
}

TEST(AgentConfigTest, FinalizeChecksTheLogLevel) {
  for (const char* level : {"trace", "debug", "info", "warn", "error"}) {
    EXPECT_TRUE(loadFinal(std::string("logLevel: ") + level + "\n")) << level;
  }
  EXPECT_EQ(finalError("logLevel: verbose\n"),
            "logLevel: \"verbose\" is not trace, debug, info, warn or error");
  EXPECT_THAT(finalError("logLevel: INFO\n"), HasSubstr("\"INFO\" is not"));
}

TEST(AgentConfigTest, ReadsAndChecksTheLogFormat) {
  EXPECT_EQ(AgentConfig{}.logFormat, "text");
  auto json = loadFinal("logFormat: json\n");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->logFormat, "json");
  EXPECT_TRUE(loadFinal("logFormat: text\n"));
  EXPECT_EQ(finalError("logFormat: logfmt\n"), "logFormat: \"logfmt\" is not text or json");
  EXPECT_EQ(loadError("logFormat: [json]\n"), "config.yaml: logFormat: must be a string");
  EXPECT_EQ(loadError("logFormat: json\nlogFormat: text\n"),
            "config.yaml: logFormat: appears more than once");
}

TEST(AgentConfigTest, OverlappingPoolsNameBothPools) {
  const auto message = finalError(R"(
pools:
  default:
    ranges: ["30000-30999"]
  games:
    ranges: ["31000-31099", "30900-30950"]
)");
  EXPECT_THAT(message,
              AllOf(HasSubstr("pools: "), HasSubstr("\"games\""), HasSubstr("30900-30950"),
                    HasSubstr("\"default\""), HasSubstr("30000-30999"), HasSubstr("overlaps")));
}

TEST(AgentConfigTest, OverlappingRangesInOnePoolAreErrors) {
  const auto message =
      finalError("pools:\n  default:\n    ranges: ['30000-30010', '30005-30020']\n");
  EXPECT_THAT(message,
              AllOf(HasSubstr("overlaps"), HasSubstr("30005-30020"), HasSubstr("30000-30010")));
}

TEST(AgentConfigTest, DuplicatePoolNamesAreErrors) {
  // YAML itself forbids duplicate keys; yaml-cpp keeps both, so the reader refuses them.
  auto config =
      loadFinal("pools:\n  games:\n    ranges: ['7000']\n  games:\n    ranges: ['8000']\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message, "config.yaml: pools.games: appears more than once");
}

TEST(AgentConfigTest, AdjacentPoolsAreFine) {
  EXPECT_TRUE(loadFinal(
      "pools:\n  default:\n    ranges: ['30000-30099']\n  b:\n    ranges: ['30100-30199']\n"));
}

TEST(AgentConfigTest, WholePortSpaceIsOnePool) {
  auto config = loadFinal("pools:\n  default:\n    ranges: ['1-65535']\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
}

// --- parsePortRanges and setDefaultPoolRanges (--port-range) ---------------------------------

TEST(ParsePortRangesTest, ParsesListsAndSinglePorts) {
  auto ranges = parsePortRanges("30000-32767");
  ASSERT_TRUE(ranges.has_value());
  EXPECT_EQ(*ranges, std::vector<PortRange>{range(30000, 32767)});
  ranges = parsePortRanges("20000-20999,22000-22999, 8080 ,1-1");
  ASSERT_TRUE(ranges.has_value()) << ranges.error().message;
  EXPECT_EQ(*ranges, (std::vector<PortRange>{range(20000, 20999), range(22000, 22999),
                                             range(8080, 8080), range(1, 1)}));
  EXPECT_EQ(*parsePortRanges("65535"), std::vector<PortRange>{range(65535, 65535)});
}

TEST(ParsePortRangesTest, ErrorsNameTheBadItem) {
  auto ranges = parsePortRanges("30000-30010,31000-30000");
  ASSERT_FALSE(ranges.has_value());
  EXPECT_EQ(ranges.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(ranges.error().message,
              HasSubstr("port range \"31000-30000\" is empty: its first port is above its last"));
  for (const char* bad : {"", ",", "30000,", ",30000", "30000,,30001", "0", "65536", "a-b",
                          "30000-", "1-2-3", "30000\t", "99999999999999999999"}) {
    auto parsed = parsePortRanges(bad);
    ASSERT_FALSE(parsed.has_value()) << "'" << bad << "'";
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_THAT(parsed.error().message, HasSubstr("port range \"")) << bad;
  }
}

TEST(ParsePortRangesTest, OverlapsAreLeftToFinalize) {
  // parsePortRanges only parses; the allocator's check in finalizeConfig catches overlaps.
  auto ranges = parsePortRanges("30000-30010,30005-30020");
  ASSERT_TRUE(ranges.has_value());
  AgentConfig config;
  setDefaultPoolRanges(config, *ranges);
  EXPECT_THAT(finalizeConfig(config).error().message, HasSubstr("overlaps"));
}

TEST(SetDefaultPoolRangesTest, CreatesOrReplacesTheDefaultPool) {
  AgentConfig config;
  setDefaultPoolRanges(config, {range(30000, 30009)});
  ASSERT_EQ(config.pools.size(), 1u);
  EXPECT_EQ(config.pools[0].name, "default");
  EXPECT_EQ(config.pools[0].ranges, std::vector<PortRange>{range(30000, 30009)});

  // --port-range over a config file: only the ranges change; strategy and protocols stay.
  auto loaded = load(
      "pools:\n  games:\n    ranges: ['7000']\n  default:\n    ranges: ['40000-40099']\n"
      "    strategy: random\n    protocols: [tcp]\n");
  ASSERT_TRUE(loaded.has_value());
  setDefaultPoolRanges(*loaded, {range(30000, 30009)});
  ASSERT_EQ(loaded->pools.size(), 2u);
  EXPECT_EQ(loaded->pools[1].name, "default");
  EXPECT_EQ(loaded->pools[1].ranges, std::vector<PortRange>{range(30000, 30009)});
  EXPECT_EQ(loaded->pools[1].strategy, core::Strategy::kRandom);
  EXPECT_EQ(loaded->pools[1].protocols, std::vector<PortProtocol>{PortProtocol::kTcp});
  EXPECT_TRUE(finalizeConfig(*loaded));
}

/// A config file in a fresh temp dir, removed at the end of the test.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& yaml) { std::ofstream(path()) << yaml; }
  std::string path() const { return dir_.path() + "/agent.yaml"; }

 private:
  test::TempDir dir_;
};

TEST(ResolveConfigTest, WithoutAFileGivesTheDefaults) {
  const auto config = resolveConfig({});
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->stateDir, kDefaultStateDir);
  EXPECT_EQ(config->socketPath, api::kDefaultAgentSocket);
  EXPECT_EQ(config->tableRepairSeconds, kDefaultTableRepairSeconds);
  EXPECT_FALSE(config->allowEmptyGc);
  ASSERT_EQ(config->pools.size(), 1u);
  EXPECT_EQ(config->pools[0].ranges, std::vector<PortRange>{range(30000, 32767)});
}

TEST(ResolveConfigTest, FlagsGoOnTopOfTheFile) {
  const ConfigFile file(
      "stateDir: /var/lib/from-file\nlogLevel: debug\ntableRepairSeconds: 5\n"
      "pools:\n  default:\n    ranges: ['40000-40099']\n    strategy: random\n");
  CommandLine flags;
  flags.configPath = file.path();
  flags.settings["stateDir"] = "/var/lib/from-flag";
  flags.portRange = "30000-30009";
  flags.settings["reserveLocalPorts"] = "false";
  flags.settings["tableRepairSeconds"] = "0";
  flags.settings["allowEmptyGc"] = "true";
  const auto config = resolveConfig(flags);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->stateDir, "/var/lib/from-flag");
  EXPECT_EQ(config->logLevel, "debug") << "a flag left empty keeps the file's value";
  EXPECT_FALSE(config->reserveLocalPorts);
  EXPECT_EQ(config->tableRepairSeconds, 0u);
  EXPECT_TRUE(config->allowEmptyGc);
  ASSERT_EQ(config->pools.size(), 1u);
  EXPECT_EQ(config->pools[0].ranges, std::vector<PortRange>{range(30000, 30009)});
  EXPECT_EQ(config->pools[0].strategy, core::Strategy::kRandom);
}

TEST(ResolveConfigTest, ProcSysNetFlagOverridesTheFileAndIsChecked) {
  const ConfigFile file("procSysNet: /host/proc/sys/net\n");
  CommandLine flags;
  flags.configPath = file.path();
  const auto fromFile = resolveConfig(flags);
  ASSERT_TRUE(fromFile.has_value()) << fromFile.error().message;
  EXPECT_EQ(fromFile->procSysNet, "/host/proc/sys/net");
  flags.settings["procSysNet"] = "/mnt/net";
  const auto fromFlag = resolveConfig(flags);
  ASSERT_TRUE(fromFlag.has_value()) << fromFlag.error().message;
  EXPECT_EQ(fromFlag->procSysNet, "/mnt/net");
  flags.settings["procSysNet"] = "proc/sys/net";
  const auto bad = resolveConfig(flags);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, "procSysNet: \"proc/sys/net\" must be an absolute path");
}

TEST(ResolveConfigTest, MetricsAddressFlagOverridesTheFileAndEmptyTurnsItOff) {
  ConfigFile file("metricsAddress: 0.0.0.0:9810\n");
  CommandLine flags;
  flags.configPath = file.path();
  auto fromFile = resolveConfig(flags);
  ASSERT_TRUE(fromFile.has_value()) << fromFile.error().message;
  EXPECT_EQ(fromFile->metricsAddress, "0.0.0.0:9810");
  flags.settings["metricsAddress"] = "";
  auto off = resolveConfig(flags);
  ASSERT_TRUE(off.has_value()) << off.error().message;
  EXPECT_EQ(off->metricsAddress, "");
  flags.settings["metricsAddress"] = "[::1]";
  auto bad = resolveConfig(flags);
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message, HasSubstr("metricsAddress: \"[::1]\""));
}

TEST(ResolveConfigTest, ErrorsNameTheFlagOrTheFile) {
  CommandLine missing;
  missing.configPath = "/nonexistent/hostport/agent.yaml";
  EXPECT_EQ(resolveConfig(missing).error().message,
            "--config: cannot read /nonexistent/hostport/agent.yaml");

  CommandLine badRange;
  badRange.portRange = "30000-20000";
  EXPECT_THAT(resolveConfig(badRange).error().message, ::testing::StartsWith("--port-range: "));

  const ConfigFile file("logLevel: loud\n");
  CommandLine badFile;
  badFile.configPath = file.path();
  EXPECT_THAT(resolveConfig(badFile).error().message, HasSubstr("logLevel: \"loud\""));

  CommandLine badFlag;
  badFlag.settings["socket"] = "relative.sock";
  EXPECT_THAT(resolveConfig(badFlag).error().message, ::testing::StartsWith("socket: "));
}

// --- chaining into the CNI configuration ------------------------------------------------

TEST(CniChainingConfigTest, DefaultsChainOnlyInAClusterIntoTheStandardDirs) {
  const AgentConfig config;
  EXPECT_EQ(config.chainCni, ChainCni::kAuto);
  EXPECT_EQ(config.cniConfDir, "/etc/cni/net.d");
  EXPECT_EQ(config.cniBinDir, "/opt/cni/bin");
  EXPECT_TRUE(config.replacePortmap);
  EXPECT_TRUE(chainsCni(config, /*inCluster=*/true));
  EXPECT_FALSE(chainsCni(config, /*inCluster=*/false));
}

TEST(CniChainingConfigTest, ExplicitChoicesIgnoreWhereTheAgentRuns) {
  AgentConfig config;
  config.chainCni = ChainCni::kOn;
  EXPECT_TRUE(chainsCni(config, false));
  config.chainCni = ChainCni::kOff;
  EXPECT_FALSE(chainsCni(config, true));
}

TEST(CniChainingConfigTest, FileKeysAreRead) {
  auto config = loadFinal(
      "chainCni: \"true\"\ncniConfDir: /tmp/net.d\ncniBinDir: /tmp/bin\nreplacePortmap: false\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->chainCni, ChainCni::kOn);
  EXPECT_EQ(config->cniConfDir, "/tmp/net.d");
  EXPECT_EQ(config->cniBinDir, "/tmp/bin");
  EXPECT_FALSE(config->replacePortmap);
}

TEST(CniChainingConfigTest, ErrorsNameTheFieldAndTheValue) {
  EXPECT_EQ(load("chainCni: sometimes\n").error().message,
            "config.yaml: chainCni: \"sometimes\" is not auto, true or false");
  EXPECT_EQ(loadFinal("cniConfDir: net.d\n").error().message,
            "cniConfDir: \"net.d\" must be an absolute path");
  EXPECT_EQ(loadFinal("cniBinDir: ''\n").error().message,
            "cniBinDir: \"\" must be an absolute path");
  EXPECT_THAT(load("replacePortmap: yes\n").error().message,
              HasSubstr("replacePortmap: \"yes\" is not true or false"));
}

TEST(CniChainingConfigTest, FlagsGoOnTopAndAreChecked) {
  const ConfigFile file("chainCni: \"true\"\ncniConfDir: /from/file\n");
  CommandLine flags;
  flags.configPath = file.path();
  flags.settings["chainCni"] = "false";
  flags.settings["cniConfDir"] = "/from/flag";
  flags.settings["replacePortmap"] = "false";
  const auto config = resolveConfig(flags);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->chainCni, ChainCni::kOff);
  EXPECT_EQ(config->cniConfDir, "/from/flag");
  EXPECT_FALSE(config->replacePortmap);

  CommandLine bad;
  bad.settings["chainCni"] = "maybe";
  EXPECT_EQ(resolveConfig(bad).error().message,
            "--chain-cni: \"maybe\" is not auto, true or false");
  CommandLine badReplace;
  badReplace.settings["replacePortmap"] = "1";
  EXPECT_EQ(resolveConfig(badReplace).error().message,
            "--replace-portmap: \"1\" is not true or false");
}

// --- hostile YAML -------------------------------------------------------------------------

TEST(AgentConfigHostileTest, AliasBombIsNotExpanded) {
  // "Billion laughs": each level refers to the previous one nine times. yaml-cpp shares aliased
  // nodes instead of copying them, and the unknown key fails before anything walks the tree.
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 12; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [" + prev;
    for (int i = 0; i < 8; ++i) text += ", " + prev;
    text += "]\n";
  }
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(loadError(text), "config.yaml: a0: unknown key");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(AgentConfigHostileTest, AliasBombUnderAKnownKeyIsATypeError) {
  std::string text =
      "pools:\n  default:\n    ranges: &r0 ['1', '2', '3', '4', '5', '6', '7', '8']\n";
  text += "    protocols: &r1 [*r0, *r0, *r0, *r0, *r0, *r0, *r0, *r0]\n";
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(loadError(text), "config.yaml: pools.default.protocols[0]: must be a string");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(AgentConfigHostileTest, AliasesOfScalarsResolve) {
  // Aliases are legal YAML; a scalar alias is read like the scalar.
  auto config = load("stateDir: &d /srv/state\nsocket: /run/x.sock\nlogLevel: &l warn\n");
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->stateDir, "/srv/state");
  auto aliased = load("pools:\n  default:\n    ranges: &r ['30000-30009']\n  b:\n    ranges: *r\n");
  ASSERT_TRUE(aliased.has_value()) << aliased.error().message;
  // ...and two pools that share ranges through an alias overlap.
  AgentConfig config2 = *aliased;
  EXPECT_THAT(finalizeConfig(config2).error().message, HasSubstr("overlaps"));
}

TEST(AgentConfigHostileTest, UndefinedAliasIsASyntaxError) {
  EXPECT_THAT(loadError("stateDir: *nowhere\n"), HasSubstr("config.yaml: not valid YAML"));
}

TEST(AgentConfigHostileTest, DeepNestingIsRefusedWithoutCrashing) {
  // yaml-cpp 0.7 stops at a depth limit (DeepRecursion) instead of overflowing the stack.
  for (const auto& [open, close] : {std::pair{"[", "]"}, std::pair{"{a: ", "}"}}) {
    std::string text = "stateDir: ";
    for (int i = 0; i < 100000; ++i) text += open;
    for (int i = 0; i < 100000; ++i) text += close;
    const auto message = loadError(text);
    EXPECT_THAT(message, HasSubstr("config.yaml: ")) << open;
  }
}

TEST(AgentConfigHostileTest, HugeScalarIsReadWhole) {
  // There is no size limit on the file: a 4 MB value is read (and then judged on its merits).
  const std::string bigScalar = "stateDir: /" + std::string(4 << 20, 'a') + "\n";
  auto config = loadFinal(bigScalar);
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->stateDir.size(), (4u << 20) + 1);
}

TEST(AgentConfigHostileTest, ManyKeysFailAtTheFirstUnknownOne) {
  std::string manyKeys;
  for (int i = 0; i < 100000; ++i) manyKeys += "k" + std::to_string(i) + ": v\n";
  EXPECT_EQ(loadError(manyKeys), "config.yaml: k0: unknown key");
}

TEST(AgentConfigHostileTest, EveryPortAsItsOwnRange) {
  std::string manyRanges = "pools:\n  default:\n    ranges:\n";
  for (int port = 1; port <= 65535; ++port)
    manyRanges += "      - '" + std::to_string(port) + "'\n";
  auto ranges = loadFinal(manyRanges);
  ASSERT_TRUE(ranges.has_value()) << ranges.error().message;
  EXPECT_EQ(ranges->pools.at(0).ranges.size(), 65535u);
}

TEST(AgentConfigHostileTest, NonUtf8FailsCleanly) {
  // Bytes that are not UTF-8 in a value reach the checks as bytes; the message cuts and
  // quotes them (no crash, no exception).
  auto level = loadFinal("logLevel: \"\xff\xfe\"\n");
  if (level) {
    ADD_FAILURE() << "a non-UTF-8 logLevel was accepted";
  } else {
    EXPECT_EQ(level.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(level.error().message, HasSubstr("logLevel"));
  }
  for (const std::string& text :
       {std::string("\xff\xfe\x00\x01", 4), std::string("stateDir: /a\x80\x81\n"),
        std::string("pools:\n  \xc3\x28:\n    ranges: ['1']\n"),
        std::string("\xef\xbb\xbf") + "logLevel: info\n", std::string("logLevel: in\0fo\n", 15)}) {
    AgentConfig config;
    Result<void> applied;
    EXPECT_NO_THROW(applied = applyYamlConfig(text, "config.yaml", config));
    if (!applied) {
      EXPECT_EQ(applied.error().code, ErrorCode::kInvalidArgument);
      EXPECT_THAT(applied.error().message, HasSubstr("config.yaml"));
    }
  }
}

TEST(AgentConfigHostileTest, NonScalarKeysFailCleanly) {
  // A complex key cannot be a config key; the error still names the file.
  for (const char* text : {"? [a, b]\n: 1\n", "{[a]: 1}\n", "pools:\n  ? {x: y}\n  : {}\n"}) {
    auto config = load(text);
    ASSERT_FALSE(config.has_value()) << text;
    EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(config.error().message, HasSubstr("config.yaml: ")) << text;
  }
}

TEST(AgentConfigHostileTest, KeysInMessagesCannotForgeLogLines) {
  // A key path that is more than plain words is echoed through quoteText(), so a newline in it
  // cannot start a forged log line.
  for (const auto& [text, path, problem] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"\"bad\\nINFO forged\\x7f\": 1\n", "config.yaml: \"bad\\nINFO forged\\u007f\"",
            "INFO forged"},
           {"pools:\n  \"x\\nERROR forged\":\n    ranges: ['1']\n",
            "config.yaml: \"pools.x\\nERROR forged\"",
            "pool names must be lowercase letters, digits and '-', start and end with a letter or "
            "digit, and be at most 63 characters"},
           {"pools:\n  games:\n    ranges: ['1']\n    \"a\\tb\": 1\n",
            "config.yaml: \"pools.games.a\\tb\"", "unknown key"},
       }) {
    const auto message = loadError(text);
    EXPECT_THAT(message, AllOf(HasSubstr(path), HasSubstr(problem), Not(HasSubstr("\n")),
                               Not(HasSubstr("\t")), Not(HasSubstr("\x7f"))))
        << message;
  }
}

TEST(AgentConfigHostileTest, PlainKeyPathsStayBareUpTo128Characters) {
  // The longest path a valid file can produce: a pool name of 63 characters, then a list index.
  const std::string name(63, 'p');
  EXPECT_EQ(
      loadError("pools:\n  " + name + ":\n    ranges: ['1']\n    protocols: [tcp, icmp]\n"),
      "config.yaml: pools." + name + ".protocols[1]: \"icmp\" is not tcp, udp, sctp or tcpudp");
  EXPECT_EQ(loadError(std::string(128, 'k') + ": 1\n"),
            "config.yaml: " + std::string(128, 'k') + ": unknown key");
  EXPECT_EQ(loadError(std::string(129, 'k') + ": 1\n"),
            "config.yaml: \"" + std::string(64, 'k') + "\"...: unknown key");
}

TEST(AgentConfigHostileTest, HugeKeysAreCutInMessages) {
  // A plain key may be 1024 characters; an explicit ("? ") key any length.
  for (const std::string& text :
       {std::string(1000, 'k') + ": 1\n", "? " + std::string(1 << 20, 'k') + "\n: 1\n"}) {
    const auto message = loadError(text);
    EXPECT_TRUE(message.starts_with("config.yaml: \"kkkkkkkk")) << message.substr(0, 80);
    EXPECT_TRUE(message.ends_with(": unknown key")) << message.substr(0, 80);
    EXPECT_LT(message.size(), 300u);
  }
}

}  // namespace
}  // namespace hostport::agent::config
