#include "cni-plugin/cni_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace hostport::cni {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using Environment = std::map<std::string, std::string>;

/// An ADD as containerd sends it.
Environment addEnvironment() {
  return {
      {"CNI_COMMAND", "ADD"},
      {"CNI_CONTAINERID", "3f1c0de2a9b84e5f9d1e2c3b4a5f6e7d"},
      {"CNI_NETNS", "/var/run/netns/cni-1234"},
      {"CNI_IFNAME", "eth0"},
      {"CNI_PATH", "/opt/cni/bin"},
      {"CNI_ARGS",
       "K8S_POD_INFRA_CONTAINER_ID=3f1c0de2;K8S_POD_UID=0a1b;IgnoreUnknown=1;"
       "K8S_POD_NAMESPACE=games;K8S_POD_NAME=server-0"},
  };
}

Result<CniEnv> parse(const Environment& environment) {
  return parseCniEnv([&environment](const char* name) -> const char* {
    const auto it = environment.find(name);
    return it == environment.end() ? nullptr : it->second.c_str();
  });
}

/// The error message for `environment` with `variable` set to `value`.
std::string errorWith(Environment environment, const std::string& variable,
                      const std::string& value) {
  environment[variable] = value;
  const auto env = parse(environment);
  EXPECT_FALSE(env.has_value()) << variable << "=" << value;
  if (env) return "";
  EXPECT_EQ(env.error().code, ErrorCode::kInvalidEnvironment);
  return env.error().message;
}

std::string errorWithout(Environment environment, const std::string& variable) {
  environment.erase(variable);
  const auto env = parse(environment);
  EXPECT_FALSE(env.has_value()) << "without " << variable;
  if (env) return "";
  EXPECT_EQ(env.error().code, ErrorCode::kInvalidEnvironment);
  return env.error().message;
}

TEST(CniEnvTest, ParsesEveryVariableOfAnAdd) {
  const auto env = parse(addEnvironment());

  ASSERT_TRUE(env.has_value()) << env.error().message;
  EXPECT_EQ(env->verb, Verb::kAdd);
  EXPECT_EQ(env->containerId, "3f1c0de2a9b84e5f9d1e2c3b4a5f6e7d");
  EXPECT_EQ(env->netns, "/var/run/netns/cni-1234");
  EXPECT_EQ(env->ifname, "eth0");
  EXPECT_EQ(env->path, "/opt/cni/bin");
  EXPECT_EQ(env->args.at("K8S_POD_NAMESPACE"), "games");
  EXPECT_EQ(env->args.at("K8S_POD_NAME"), "server-0");
  EXPECT_EQ(env->args.at("K8S_POD_UID"), "0a1b");
}

TEST(CniEnvTest, ReadsCniArgsTheSameInAnyOrder) {
  Environment first = addEnvironment();
  first["CNI_ARGS"] = "K8S_POD_NAMESPACE=games;K8S_POD_NAME=server-0;K8S_POD_UID=0a1b";
  Environment second = addEnvironment();
  second["CNI_ARGS"] = "K8S_POD_UID=0a1b;K8S_POD_NAME=server-0;K8S_POD_NAMESPACE=games";

  const auto a = parse(first);
  const auto b = parse(second);

  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->args, b->args);
  EXPECT_EQ(a->args.size(), 3u);
}

TEST(CniEnvTest, KeepsUnknownCniArgsKeysAsPlainKeys) {
  const auto env = parse(addEnvironment());

  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->args.at("IgnoreUnknown"), "1");
  EXPECT_EQ(env->args.at("K8S_POD_INFRA_CONTAINER_ID"), "3f1c0de2");
}

TEST(CniEnvTest, IgnoresEmptyCniArgsSegments) {
  Environment environment = addEnvironment();
  environment["CNI_ARGS"] = ";K8S_POD_NAME=a;;K8S_POD_NAMESPACE=b;";

  const auto env = parse(environment);

  ASSERT_TRUE(env.has_value()) << env.error().message;
  EXPECT_EQ(env->args, (std::map<std::string, std::string>{{"K8S_POD_NAME", "a"},
                                                           {"K8S_POD_NAMESPACE", "b"}}));
}

TEST(CniEnvTest, KeepsEqualsSignsAndEmptyValuesInCniArgs) {
  Environment environment = addEnvironment();
  environment["CNI_ARGS"] = "TOKEN=a=b==;EMPTY=";

  const auto env = parse(environment);

  ASSERT_TRUE(env.has_value()) << env.error().message;
  EXPECT_EQ(env->args.at("TOKEN"), "a=b==");
  EXPECT_EQ(env->args.at("EMPTY"), "");
}

TEST(CniEnvTest, TreatsMissingCniArgsAsNoArgs) {
  const auto env = parse([] {
    Environment environment = addEnvironment();
    environment.erase("CNI_ARGS");
    return environment;
  }());

  ASSERT_TRUE(env.has_value());
  EXPECT_TRUE(env->args.empty());
}

TEST(CniEnvTest, RejectsCniArgsSegmentWithoutEqualsSign) {
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_ARGS", "K8S_POD_NAME=a;garbage;K8S_POD_UID=b"),
            "CNI_ARGS: \"garbage\" is not a KEY=VALUE pair");
}

TEST(CniEnvTest, RejectsCniArgsSegmentWithEmptyKey) {
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_ARGS", "=value"),
            "CNI_ARGS: \"=value\" has an empty key");
}

TEST(CniEnvTest, AcceptsEveryVerbSpelledInUppercase) {
  for (const Verb verb :
       {Verb::kAdd, Verb::kDel, Verb::kCheck, Verb::kVersion, Verb::kGc, Verb::kStatus}) {
    Environment environment = addEnvironment();
    environment["CNI_COMMAND"] = std::string(verbName(verb));

    const auto env = parse(environment);

    ASSERT_TRUE(env.has_value()) << verbName(verb) << ": " << env.error().message;
    EXPECT_EQ(env->verb, verb);
  }
}

TEST(CniEnvTest, NamesVerbsAsTheSpecSpellsThem) {
  EXPECT_EQ(verbName(Verb::kAdd), "ADD");
  EXPECT_EQ(verbName(Verb::kDel), "DEL");
  EXPECT_EQ(verbName(Verb::kCheck), "CHECK");
  EXPECT_EQ(verbName(Verb::kVersion), "VERSION");
  EXPECT_EQ(verbName(Verb::kGc), "GC");
  EXPECT_EQ(verbName(Verb::kStatus), "STATUS");
}

TEST(CniEnvTest, RejectsMissingOrEmptyCommand) {
  EXPECT_EQ(errorWithout(addEnvironment(), "CNI_COMMAND"), "CNI_COMMAND: missing");
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_COMMAND", ""), "CNI_COMMAND: missing");
}

TEST(CniEnvTest, RejectsVerbsInOtherCaseOrUnknown) {
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_COMMAND", "add"),
            "CNI_COMMAND: \"add\" is not one of ADD, DEL, CHECK, VERSION, GC, STATUS");
  EXPECT_THAT(errorWith(addEnvironment(), "CNI_COMMAND", "ADD "), HasSubstr("\"ADD \""));
  EXPECT_THAT(errorWith(addEnvironment(), "CNI_COMMAND", "REBOOT"), HasSubstr("\"REBOOT\""));
}

TEST(CniEnvTest, RequiresContainerIdAndIfnameForAddDelAndCheck) {
  for (const std::string verb : {"ADD", "DEL", "CHECK"}) {
    Environment environment = addEnvironment();
    environment["CNI_COMMAND"] = verb;

    EXPECT_EQ(errorWithout(environment, "CNI_CONTAINERID"),
              "CNI_CONTAINERID: missing (required for " + verb + ")");
    EXPECT_EQ(errorWithout(environment, "CNI_IFNAME"),
              "CNI_IFNAME: missing (required for " + verb + ")");
    EXPECT_EQ(errorWith(environment, "CNI_IFNAME", ""),
              "CNI_IFNAME: missing (required for " + verb + ")");
  }
}

TEST(CniEnvTest, RequiresNetnsForAddAndCheck) {
  for (const std::string verb : {"ADD", "CHECK"}) {
    Environment environment = addEnvironment();
    environment["CNI_COMMAND"] = verb;

    EXPECT_EQ(errorWithout(environment, "CNI_NETNS"),
              "CNI_NETNS: missing (required for " + verb + ")");
    EXPECT_EQ(errorWith(environment, "CNI_NETNS", ""),
              "CNI_NETNS: missing (required for " + verb + ")");
  }
}

TEST(CniEnvTest, ChecksThatTheNetnsOfAnAddOrCheckIsANetworkNamespace) {
  std::vector<std::string> asked;
  const NetnsCheck regularFile = [&asked](const std::string& path) -> Result<void> {
    asked.push_back(path);
    return std::unexpected(Error{ErrorCode::kInvalidArgument,
                                 "is a regular file, not a network namespace",
                                 {},
                                 std::make_error_code(std::errc::invalid_argument)});
  };
  for (const std::string verb : {"ADD", "CHECK"}) {
    Environment environment = addEnvironment();
    environment["CNI_COMMAND"] = verb;
    const auto env = parse(environment);
    ASSERT_TRUE(env.has_value()) << env.error().message;
    const auto checked = checkCniNetns(*env, regularFile);
    ASSERT_FALSE(checked.has_value()) << verb;
    EXPECT_EQ(checked.error().code, ErrorCode::kInvalidEnvironment);
    EXPECT_EQ(checked.error().message,
              "CNI_NETNS: \"/var/run/netns/cni-1234\" is a regular file, not a network "
              "namespace");
    EXPECT_EQ(checked.error().cause, std::make_error_code(std::errc::invalid_argument));
  }
  EXPECT_EQ(asked.size(), 2u);

  // Never looked up: a relative path (it would be read from the plugin's working directory), and
  // DEL's netns, which may be gone.
  Environment relative = addEnvironment();
  relative["CNI_NETNS"] = "proc/1/ns/net";
  const auto env = parse(relative);
  ASSERT_TRUE(env.has_value()) << env.error().message;
  const auto checked = checkCniNetns(*env, regularFile);
  ASSERT_FALSE(checked.has_value());
  EXPECT_EQ(checked.error().message,
            "CNI_NETNS: \"proc/1/ns/net\" must be an absolute path of printable characters");
  Environment del = addEnvironment();
  del["CNI_COMMAND"] = "DEL";
  const auto delEnv = parse(del);
  ASSERT_TRUE(delEnv.has_value());
  EXPECT_TRUE(checkCniNetns(*delEnv, regularFile).has_value());
  EXPECT_EQ(asked.size(), 2u);
}

TEST(CniEnvTest, AcceptsDelWithEmptyNetnsAsContainerdSendsAtSandboxRemoval) {
  Environment environment = addEnvironment();
  environment["CNI_COMMAND"] = "DEL";
  environment["CNI_NETNS"] = "";

  const auto env = parse(environment);

  ASSERT_TRUE(env.has_value()) << env.error().message;
  EXPECT_EQ(env->verb, Verb::kDel);
  EXPECT_EQ(env->netns, "");
  EXPECT_EQ(env->ifname, "eth0");
}

TEST(CniEnvTest, NeedsOnlyTheCommandForVersionGcAndStatus) {
  for (const std::string verb : {"VERSION", "GC", "STATUS"}) {
    const auto env = parse({{"CNI_COMMAND", verb}});

    ASSERT_TRUE(env.has_value()) << verb << ": " << env.error().message;
    EXPECT_EQ(verbName(env->verb), verb);
    EXPECT_TRUE(env->containerId.empty());
  }
}

TEST(CniEnvTest, IgnoresStaleAttachmentVariablesForVersion) {
  const auto env = parse({{"CNI_COMMAND", "VERSION"},
                          {"CNI_CONTAINERID", "-bad id-"},
                          {"CNI_IFNAME", "a/b"},
                          {"CNI_ARGS", "garbage"}});

  ASSERT_TRUE(env.has_value()) << env.error().message;
  EXPECT_EQ(env->verb, Verb::kVersion);
  EXPECT_TRUE(env->containerId.empty());
  EXPECT_TRUE(env->args.empty());
}

TEST(CniEnvTest, AcceptsContainerIdsOfTheSpecGrammar) {
  for (const std::string& id :
       std::vector<std::string>{"a", "0", "abc_DEF.ghi-123", std::string(100, 'f')}) {
    Environment environment = addEnvironment();
    environment["CNI_CONTAINERID"] = id;

    const auto env = parse(environment);

    ASSERT_TRUE(env.has_value()) << id << ": " << env.error().message;
    EXPECT_EQ(env->containerId, id);
  }
}

TEST(CniEnvTest, RejectsContainerIdsOutsideTheSpecGrammar) {
  for (const std::string& id :
       std::vector<std::string>{"-leading-dash", "_leading", ".hidden", "has space", "a/b", "a;b",
                                "quote\"d", "new\nline", std::string(101, 'f')}) {
    EXPECT_THAT(errorWith(addEnvironment(), "CNI_CONTAINERID", id),
                HasSubstr("CNI_CONTAINERID: \""))
        << id;
  }
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_CONTAINERID", "a/b"),
            "CNI_CONTAINERID: \"a/b\" must be 1-100 characters of [A-Za-z0-9_.-], starting "
            "alphanumeric");
}

TEST(CniEnvTest, RejectsIfnameWithSlash) {
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", "a/b"),
            "CNI_IFNAME: \"a/b\" must not contain '/'");
}

TEST(CniEnvTest, RejectsIfnameWithColonQuoteOrBackslash) {
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", "eth0:1"),
            "CNI_IFNAME: \"eth0:1\" must not contain ':'");
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", "a\"b"),
            "CNI_IFNAME: \"a\\\"b\" must not contain '\"'");
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", "a\\b"),
            "CNI_IFNAME: \"a\\\\b\" must not contain '\\'");
}

TEST(CniEnvTest, RejectsIfnameWithWhitespace) {
  for (const std::string name : {"eth 0", "eth\t0", "eth0\n", "eth\r0", "eth\v0"}) {
    EXPECT_THAT(errorWith(addEnvironment(), "CNI_IFNAME", name),
                HasSubstr("must not contain whitespace"));
  }
}

TEST(CniEnvTest, RejectsIfnameWithControlOrNonAsciiCharacters) {
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", "eth\x01"),
            "CNI_IFNAME: \"eth\\u0001\" must contain only printable ASCII characters");
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", "eth\x7f"),
            "CNI_IFNAME: \"eth\\u007f\" must contain only printable ASCII characters");
  // Invalid UTF-8 from the environment still yields a printable message.
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", "eth\xff"),
            "CNI_IFNAME: \"eth\\ufffd\" must contain only printable ASCII characters");
  EXPECT_THAT(errorWith(addEnvironment(), "CNI_IFNAME", "\u00e9th0"),
              HasSubstr("\"\\u00e9th0\" must contain only printable ASCII characters"));
}

TEST(CniEnvTest, RejectsDotAndDotDotAsIfname) {
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", "."),
            "CNI_IFNAME: \".\" is not a valid name");
  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", ".."),
            "CNI_IFNAME: \"..\" is not a valid name");
}

TEST(CniEnvTest, AcceptsIfnameOfFifteenCharactersButNotSixteen) {
  Environment environment = addEnvironment();
  environment["CNI_IFNAME"] = std::string(15, 'e');
  const auto env = parse(environment);
  ASSERT_TRUE(env.has_value()) << env.error().message;
  EXPECT_EQ(env->ifname, std::string(15, 'e'));

  EXPECT_EQ(errorWith(addEnvironment(), "CNI_IFNAME", std::string(16, 'e')),
            "CNI_IFNAME: \"" + std::string(16, 'e') + "\" is longer than 15 characters");
}

TEST(CniEnvTest, EscapesAndTruncatesHostileValuesInMessages) {
  const std::string hostile = "evil\"\ninjected log line" + std::string(5000, 'x');

  for (const std::string variable : {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_IFNAME", "CNI_ARGS"}) {
    const std::string message = errorWith(addEnvironment(), variable, hostile);

    EXPECT_THAT(message, HasSubstr(variable + ": \"evil\\\"\\ninjected log line")) << variable;
    EXPECT_THAT(message, Not(HasSubstr("\n"))) << variable;
    EXPECT_LT(message.size(), 200u) << variable;
    EXPECT_THAT(message, HasSubstr("...")) << variable;
  }
}

}  // namespace
}  // namespace hostport::cni
