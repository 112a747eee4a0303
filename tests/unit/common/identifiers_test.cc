#include "common/identifiers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hostport {
namespace {

using namespace std::string_literals;  // "a\0b"s keeps its NUL

/// Every byte that is not ASCII: no grammar of ours may accept one, whatever the locale says.
std::vector<char> nonAsciiBytes() {
  std::vector<char> bytes;
  for (int byte = 0x80; byte <= 0xff; ++byte) bytes.push_back(static_cast<char>(byte));
  return bytes;
}

TEST(IdentifiersTest, AcceptsContainerIdsOfTheCniGrammar) {
  for (const std::string& id : {"a"s, "0"s, "Z"s, "abc_DEF.ghi-123"s, "a."s, "a-"s, "a_"s,
                                std::string(64, 'f'), std::string(kMaxContainerIdLength, '9')}) {
    EXPECT_TRUE(isContainerId(id)) << id;
    EXPECT_EQ(containerIdProblem(id), std::nullopt) << id;
  }
}

TEST(IdentifiersTest, RefusesContainerIdsOutsideTheCniGrammar) {
  for (const std::string& id :
       {""s, std::string(kMaxContainerIdLength + 1, 'f'), "-lead"s, "_lead"s, ".lead"s, "a b"s,
        "a/b"s, "a;b"s, "a:b"s, "a\"b"s, "a\\b"s, "a\nb"s, "a\tb"s, "a\x01"s, "a\x7f"s, "a\0b"s,
        "a@b"s, "a+b"s}) {
    EXPECT_FALSE(isContainerId(id)) << id;
    EXPECT_EQ(containerIdProblem(id),
              "must be 1-100 characters of [A-Za-z0-9_.-], starting alphanumeric")
        << id;
  }
  for (const char byte : nonAsciiBytes()) {
    EXPECT_FALSE(isContainerId("a"s + byte)) << static_cast<int>(byte);
    EXPECT_FALSE(isContainerId(std::string(1, byte) + "a")) << static_cast<int>(byte);
  }
}

TEST(IdentifiersTest, AcceptsInterfaceNamesOfPrintableAsciiUpToFifteen) {
  for (const std::string& name :
       {"eth0"s, "e"s, "net1@x"s, "eth0.100"s, "veth-1_2"s, "..."s, ".a"s, "!#$%&'()*+,-;<"s,
        "=>?@[]^_`{|}~"s, std::string(kMaxIfnameLength, 'e')}) {
    EXPECT_TRUE(isIfname(name)) << name;
    EXPECT_EQ(ifnameProblem(name), std::nullopt) << name;
  }
}

TEST(IdentifiersTest, NamesWhatIsWrongWithAnInterfaceName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "must not be empty"},
      {std::string(kMaxIfnameLength + 1, 'e'), "is longer than 15 characters"},
      {".", "is not a valid name"},
      {"..", "is not a valid name"},
      {"eth 0", "must not contain whitespace"},
      {"eth\t0", "must not contain whitespace"},
      {"eth0\n", "must not contain whitespace"},
      {"eth\v0", "must not contain whitespace"},
      {"eth\f0", "must not contain whitespace"},
      {"eth\r0", "must not contain whitespace"},
      {"eth\x01", "must contain only printable ASCII characters"},
      {"eth\x1f", "must contain only printable ASCII characters"},
      {"eth\x7f", "must contain only printable ASCII characters"},
      {"eth\0"s, "must contain only printable ASCII characters"},
      {"\xc3\xa9th0", "must contain only printable ASCII characters"},
      {"eth\xff", "must contain only printable ASCII characters"},
      {"a/b", "must not contain '/'"},
      {"eth0:1", "must not contain ':'"},
      {"a\"b", "must not contain '\"'"},
      {"a\\b", "must not contain '\\'"},
      // The first problem wins: length before characters, then the first bad character.
      {"a/" + std::string(kMaxIfnameLength, 'e'), "is longer than 15 characters"},
      {"a b/c", "must not contain whitespace"},
      {"a/b c", "must not contain '/'"},
  };
  for (const auto& [name, problem] : cases) {
    EXPECT_FALSE(isIfname(name)) << name;
    EXPECT_EQ(ifnameProblem(name), problem) << name;
  }
}

TEST(IdentifiersTest, AcceptsASingleByteInterfaceNameOnlyWhenItIsPrintableAscii) {
  for (int byte = 0; byte <= 0xff; ++byte) {
    const char c = static_cast<char>(byte);
    const bool expected =
        byte > ' ' && byte < 0x7f && c != '/' && c != ':' && c != '"' && c != '\\' && c != '.';
    EXPECT_EQ(isIfname(std::string(1, c)), expected) << byte;
  }
}

TEST(IdentifiersTest, KernelRuleRefusesWhatTheKernelRefuses) {
  for (const std::string& name :
       {""s, std::string(kMaxIfnameLength + 1, 'e'), "."s, ".."s, "a/b"s, "a:b"s, "a b"s, "a\tb"s,
        "a\nb"s, "a\rb"s, "a\x01"s, "a\x7f"s, "a\0b"s}) {
    EXPECT_FALSE(isKernelIfname(name)) << name;
    EXPECT_FALSE(isIfname(name)) << name;
  }
  EXPECT_TRUE(isKernelIfname("eth0"));
  EXPECT_TRUE(isKernelIfname(std::string(kMaxIfnameLength, 'e')));
}

TEST(IdentifiersTest, KernelRuleAcceptsNamesOursRefuses) {
  // The kernel allows quotes, backslashes and any non-ASCII byte; ours does not, because our
  // names go into nft comments and log lines unescaped.
  for (const std::string& name : {"a\"b"s, "a\\b"s, "\xc3\xa9th0"s, "eth\xff"s}) {
    EXPECT_TRUE(isKernelIfname(name)) << name;
    EXPECT_FALSE(isIfname(name)) << name;
  }
  for (int byte = 0; byte <= 0xff; ++byte) {
    const char c = static_cast<char>(byte);
    const std::string name(1, c);
    const bool expected = byte > ' ' && byte != 0x7f && c != '/' && c != ':' && c != '.';
    EXPECT_EQ(isKernelIfname(name), expected) << byte;
    // Ours is the narrower rule: whatever it accepts, the kernel accepts too.
    if (isIfname(name)) {
      EXPECT_TRUE(isKernelIfname(name)) << byte;
    }
  }
}

TEST(IdentifiersTest, AcceptsDnsLabels) {
  for (const std::string& label :
       {"a"s, "0"s, "a-b"s, "0-a-9"s, "9lives"s, "a--b"s, std::string(kMaxDnsLabelLength, 'a')}) {
    EXPECT_TRUE(isDnsLabel(label)) << label;
    EXPECT_EQ(dnsLabelProblem(label), std::nullopt) << label;
  }
}

TEST(IdentifiersTest, RefusesWhatIsNotADnsLabel) {
  for (const std::string& label :
       {""s, std::string(kMaxDnsLabelLength + 1, 'a'), "A"s, "Fast"s, "-a"s, "a-"s, "-"s, "a_b"s,
        "a.b"s, "a b"s, "a/b"s, "a\nb"s, "a\x7f"s, "a\0b"s}) {
    EXPECT_FALSE(isDnsLabel(label)) << label;
    EXPECT_EQ(dnsLabelProblem(label),
              "must be lowercase letters, digits and '-', start and end with a letter or digit, "
              "and be at most 63 characters")
        << label;
  }
  for (int byte = 0; byte <= 0xff; ++byte) {
    const char c = static_cast<char>(byte);
    EXPECT_EQ(isDnsLabel(std::string(1, c)), (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
        << byte;
  }
}

TEST(IdentifiersTest, AcceptsDnsSubdomainsUpTo253Characters) {
  // Three labels of 63 and one of 61, joined by dots: exactly 253.
  const std::string label(kMaxDnsLabelLength, 'a');
  const std::string longest = label + "." + label + "." + label + "." + std::string(61, 'b');
  ASSERT_EQ(longest.size(), kMaxDnsSubdomainLength);
  for (const std::string& name : {"web-0"s, "a"s, "a.b.c"s, "web.default.svc"s, "0.1"s, longest}) {
    EXPECT_TRUE(isDnsSubdomain(name)) << name;
    EXPECT_EQ(dnsSubdomainProblem(name), std::nullopt) << name;
  }
}

TEST(IdentifiersTest, RefusesWhatIsNotADnsSubdomain) {
  const std::string label(kMaxDnsLabelLength, 'a');
  const std::string tooLong = label + "." + label + "." + label + "." + std::string(62, 'b');
  ASSERT_EQ(tooLong.size(), kMaxDnsSubdomainLength + 1);
  for (const std::string& name :
       {""s, tooLong, "."s, "a."s, ".a"s, "a..b"s, "Web.default"s, "a_b"s, "a b"s,
        "a." + std::string(kMaxDnsLabelLength + 1, 'a'), "a.-b"s, "a-.b"s, "a\n.b"s}) {
    EXPECT_FALSE(isDnsSubdomain(name)) << name;
    EXPECT_EQ(dnsSubdomainProblem(name), "must be a DNS subdomain of at most 253 characters")
        << name;
  }
  for (const char byte : nonAsciiBytes()) {
    EXPECT_FALSE(isDnsSubdomain("a."s + byte)) << static_cast<int>(byte);
  }
}

TEST(IdentifiersTest, AcceptsPodUids) {
  for (const std::string& uid : {"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"s, "ABC-123"s, "-"s, "x"s,
                                 std::string(kMaxPodUidLength, 'u')}) {
    EXPECT_TRUE(isPodUid(uid)) << uid;
    EXPECT_EQ(podUidProblem(uid), std::nullopt) << uid;
  }
}

TEST(IdentifiersTest, RefusesWhatIsNotAPodUid) {
  for (const std::string& uid : {""s, std::string(kMaxPodUidLength + 1, 'u'), "a b"s, "a_b"s,
                                 "a.b"s, "a/b"s, "a\nb"s, "a\0b"s}) {
    EXPECT_FALSE(isPodUid(uid)) << uid;
    EXPECT_EQ(podUidProblem(uid), "must be 1-128 characters of [A-Za-z0-9-]") << uid;
  }
  for (const char byte : nonAsciiBytes()) {
    EXPECT_FALSE(isPodUid("a"s + byte)) << static_cast<int>(byte);
  }
}

TEST(IdentifiersTest, AcceptsAbsoluteNetnsPathsOfPrintableAscii) {
  for (const std::string& path : {"/"s, "/run/netns/cni-1234"s, "/proc/1234/ns/net"s,
                                  "/var/run/netns/with space"s, "/" + std::string(4095, 'n')}) {
    EXPECT_TRUE(isNetnsPath(path)) << path;
    EXPECT_EQ(netnsPathProblem(path), std::nullopt) << path;
  }
}

TEST(IdentifiersTest, RefusesWhatIsNotAnAbsoluteNetnsPath) {
  for (const std::string& path :
       {""s, "run/netns/x"s, " /run/netns/x"s, "/" + std::string(4096, 'n'), "/x\ny"s, "/x\ty"s,
        "/x\x7f"s, "/x\0y"s}) {
    EXPECT_FALSE(isNetnsPath(path)) << path;
    EXPECT_EQ(netnsPathProblem(path), "must be an absolute path of printable characters") << path;
  }
  for (const char byte : nonAsciiBytes()) {
    EXPECT_FALSE(isNetnsPath("/"s + byte)) << static_cast<int>(byte);
  }
}

TEST(IdentifiersTest, EveryGrammarRefusesEveryNonAsciiByte) {
  for (const char byte : nonAsciiBytes()) {
    const std::string text = "a"s + byte + "a";
    EXPECT_FALSE(isContainerId(text)) << static_cast<int>(byte);
    EXPECT_FALSE(isIfname(text)) << static_cast<int>(byte);
    EXPECT_FALSE(isDnsLabel(text)) << static_cast<int>(byte);
    EXPECT_FALSE(isDnsSubdomain(text)) << static_cast<int>(byte);
    EXPECT_FALSE(isPodUid(text)) << static_cast<int>(byte);
    EXPECT_FALSE(isNetnsPath("/" + text)) << static_cast<int>(byte);
    EXPECT_TRUE(isKernelIfname(text)) << static_cast<int>(byte);  // the kernel's rule does not care
  }
}

}  // namespace
}  // namespace hostport
