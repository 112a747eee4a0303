// The agent's event log (agent/log/event_log.h): the text and JSON line formats, which values are
// quoted and how, level filtering, and the parsers of --log-level and --log-format.

#include "agent/log/event_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "common/quote.h"
#include "tests/support/log_capture.h"

namespace hostport::agent::log {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::LogCapture;

// A pod name that tries to end the line and forge one of the agent's own.
const std::string kForgery =
    "web\n2026-11-25T10:00:00.000+00:00 error store: store.failed cause=forged";

class EventLogTest : public ::testing::Test {};

TEST_F(EventLogTest, TextLinesCarryTimeLevelComponentAndEvent) {
  LogCapture capture(Level::kInfo);
  event(Component::kAlloc, Level::kInfo, "alloc.granted", {{"pool", "default"}, {"size", 10}});
  event(Component::kStore, Level::kWarn, "store.failed");
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 2u) << capture.text();
  const std::regex time(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d )");
  EXPECT_TRUE(std::regex_search(lines[0], time)) << lines[0];
  EXPECT_THAT(lines[0], ::testing::EndsWith(" info alloc: alloc.granted pool=default size=10"));
  EXPECT_THAT(lines[1], ::testing::EndsWith(" warn store: store.failed"));
}

TEST_F(EventLogTest, EachComponentLogsUnderItsOwnName) {
  LogCapture capture;
  for (const auto component :
       {Component::kAgent, Component::kAlloc, Component::kStore, Component::kSocket,
        Component::kTable, Component::kServer, Component::kCni, Component::kKube}) {
    event(component, Level::kInfo, "x.y");
  }
  std::vector<std::string> names;
  for (const auto& line : capture.lines()) {
    const auto end = line.find(": x.y");
    const auto start = line.rfind(' ', end) + 1;
    names.push_back(line.substr(start, end - start));
  }
  EXPECT_THAT(names,
              ElementsAre("agent", "alloc", "store", "socket", "table", "server", "cni", "kube"));
}

TEST_F(EventLogTest, WritesPlainValuesBareAndQuotesTheRest) {
  EXPECT_EQ(formatEvent(Format::kText, "e",
                        std::vector<Field>{{"socket", "/run/hostport/agent.sock"},
                                           {"ports", "[fd00::1]:8080->80/tcp,30000->80/udp"},
                                           {"n", uint64_t{18446744073709551615u}},
                                           {"delta", -3},
                                           {"torn", true},
                                           {"empty", ""},
                                           {"spaced", "a b"},
                                           {"equals", "a=b"},
                                           {"quote", "say \"hi\""}}),
            "e socket=/run/hostport/agent.sock ports=[fd00::1]:8080->80/tcp,30000->80/udp "
            "n=18446744073709551615 delta=-3 torn=true empty=\"\" spaced=\"a b\" equals=\"a=b\" "
            "quote=\"say \\\"hi\\\"\"");
}

TEST_F(EventLogTest, QuotesOutsideTextThroughQuoteText) {
  const std::string longName(100, 'x');
  const std::string longSpaced = "a " + std::string(100, 'y');
  for (const std::string& text :
       {kForgery, std::string("evil\x7f\x01"), std::string("\xff\xfe"), longSpaced}) {
    EXPECT_EQ(formatEvent(Format::kText, "e", std::vector<Field>{untrusted("pod", text)}),
              "e pod=" + quoteText(text))
        << text;
  }
  // Plain outside text is written bare, whole.
  EXPECT_EQ(formatEvent(Format::kText, "e", std::vector<Field>{untrusted("pod", longName)}),
            "e pod=" + longName);
}

TEST_F(EventLogTest, QuotesTheAgentsOwnTextWhole) {
  const std::string cause =
      "fdatasync /var/lib/hostport/" + std::string(80, 'j') + ": Input/output error";
  const auto line = formatEvent(Format::kText, "e", std::vector<Field>{{"cause", cause}});
  EXPECT_EQ(line, "e cause=\"" + cause + "\"");
}

TEST_F(EventLogTest, APodCannotForgeALine) {
  LogCapture capture;
  event(Component::kAlloc, Level::kInfo, "alloc.granted",
        {untrusted("pod", kForgery), untrusted("command", "\r\nx")});
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 1u) << capture.text();
  EXPECT_EQ(lines[0].find('\r'), std::string::npos);
  EXPECT_TRUE(capture.events("store.failed").empty());
}

TEST_F(EventLogTest, JsonLinesParseAndKeepEveryField) {
  LogCapture capture(Level::kDebug, Format::kJson);
  event(Component::kAlloc, Level::kWarn, "alloc.conflict",
        {untrusted("pod", kForgery),
         untrusted("command", std::string("\x01\xff\"}\x7f", 5)),
         {"pid", 1234},
         {"torn_tail", false},
         {"cause", "port tcp/8080 is \"held\""}});
  event(Component::kServer, Level::kDebug, "server.request", {{"status", 404u}});
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 2u) << capture.text();
  std::vector<nlohmann::json> parsed;
  for (const auto& line : lines) {
    parsed.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
    ASSERT_TRUE(parsed.back().is_object()) << line;
  }
  const auto& conflict = parsed[0];
  EXPECT_TRUE(std::regex_match(conflict["time"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d)")))
      << conflict["time"];
  EXPECT_EQ(conflict["level"], "warn");
  EXPECT_EQ(conflict["component"], "alloc");
  EXPECT_EQ(conflict["event"], "alloc.conflict");
  EXPECT_EQ(conflict["pod"], kForgery.substr(0, kMaxEchoedBytes) + "...");  // bounded
  EXPECT_EQ(conflict["command"], "\x01\xef\xbf\xbd\"}\x7f");  // broken UTF-8 becomes U+FFFD
  EXPECT_EQ(conflict["pid"], 1234);
  EXPECT_EQ(conflict["torn_tail"], false);
  EXPECT_EQ(conflict["cause"], "port tcp/8080 is \"held\"");
  EXPECT_EQ(parsed[1]["level"], "debug");
  EXPECT_EQ(parsed[1]["status"], 404);
}

TEST_F(EventLogTest, BoundsOutsideTextInJsonAsInText) {
  const std::string longName(100, 'x');
  const std::string longSpaced = "a " + std::string(100, 'y');
  const auto jsonOf = [](const std::vector<Field>& fields) {
    return nlohmann::json::parse("{" + formatEvent(Format::kJson, "e", fields) + "}", nullptr,
                                 /*allow_exceptions=*/false);
  };
  const auto spaced = jsonOf({untrusted("pod", longSpaced)});
  ASSERT_TRUE(spaced.is_object());
  EXPECT_EQ(spaced["pod"], longSpaced.substr(0, kMaxEchoedBytes) + "...");
  EXPECT_EQ(formatEvent(Format::kJson, "e", std::vector<Field>{untrusted("pod", longSpaced)}),
            "\"event\":\"e\",\"pod\":\"a " + std::string(kMaxEchoedBytes - 2, 'y') + "...\"");
  // Plain outside text is whole, as on a text line; the agent's own text is whole.
  EXPECT_EQ(jsonOf({untrusted("pod", longName)})["pod"], longName);
  EXPECT_EQ(jsonOf({{"cause", longSpaced}})["cause"], longSpaced);
  // Short outside text that needs quoting is not cut.
  EXPECT_EQ(jsonOf({untrusted("command", "a b\x7f")})["command"], "a b\x7f");
}

TEST_F(EventLogTest, DropsEventsBelowTheLevel) {
  LogCapture capture(Level::kWarn);
  EXPECT_FALSE(enabled(Component::kAlloc, Level::kInfo));
  EXPECT_TRUE(enabled(Component::kAlloc, Level::kWarn));
  event(Component::kAlloc, Level::kDebug, "a.debug");
  event(Component::kAlloc, Level::kInfo, "a.info");
  event(Component::kAlloc, Level::kWarn, "a.warn");
  event(Component::kAlloc, Level::kError, "a.error");
  EXPECT_EQ(capture.events("a.debug").size() + capture.events("a.info").size(), 0u);
  EXPECT_EQ(capture.events("a.warn").size(), 1u);
  EXPECT_THAT(capture.text(), HasSubstr(" error alloc: a.error\n"));
}

TEST_F(EventLogTest, EnabledFollowsTheConfiguredLevelOfEveryComponent) {
  for (const Level configured : {Level::kTrace, Level::kInfo, Level::kError}) {
    LogCapture capture(configured);
    for (const auto component :
         {Component::kAgent, Component::kAlloc, Component::kStore, Component::kSocket,
          Component::kTable, Component::kServer, Component::kCni, Component::kKube}) {
      for (const Level level :
           {Level::kTrace, Level::kDebug, Level::kInfo, Level::kWarn, Level::kError}) {
        EXPECT_EQ(enabled(component, level), level >= configured)
            << componentName(component) << " at " << static_cast<int>(level);
      }
    }
  }
}

TEST_F(EventLogTest, SetLevelChangesOneComponentOnly) {
  LogCapture capture(Level::kInfo);
  setLevel(Component::kSocket, Level::kDebug);
  EXPECT_TRUE(enabled(Component::kSocket, Level::kDebug));
  EXPECT_FALSE(enabled(Component::kAlloc, Level::kDebug));
  event(Component::kSocket, Level::kDebug, "socket.busy");
  event(Component::kAlloc, Level::kDebug, "alloc.debug");
  EXPECT_EQ(capture.events("socket.busy").size(), 1u) << capture.text();
  EXPECT_TRUE(capture.events("alloc.debug").empty()) << capture.text();

  setLevel(Component::kSocket, Level::kError);
  EXPECT_FALSE(enabled(Component::kSocket, Level::kWarn));
  event(Component::kSocket, Level::kWarn, "socket.warn");
  EXPECT_TRUE(capture.events("socket.warn").empty()) << capture.text();
}

TEST_F(EventLogTest, ConfigureResetsEveryComponentsLevel) {
  {
    LogCapture capture(Level::kInfo);
    setLevel(Component::kTable, Level::kTrace);
  }
  // LogCapture's destructor configured the defaults again: info everywhere.
  EXPECT_FALSE(enabled(Component::kTable, Level::kDebug));
  EXPECT_TRUE(enabled(Component::kTable, Level::kInfo));
}

TEST_F(EventLogTest, ParsesTheLevelsAndFormatsTheFlagsTake) {
  EXPECT_EQ(parseLevel("trace"), Level::kTrace);
  EXPECT_EQ(parseLevel("debug"), Level::kDebug);
  EXPECT_EQ(parseLevel("info"), Level::kInfo);
  EXPECT_EQ(parseLevel("warn"), Level::kWarn);
  EXPECT_EQ(parseLevel("error"), Level::kError);
  auto level = parseLevel("warning");
  ASSERT_FALSE(level);
  EXPECT_EQ(level.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(level.error().message, "\"warning\" is not trace, debug, info, warn or error");

  EXPECT_EQ(parseFormat("text"), Format::kText);
  EXPECT_EQ(parseFormat("json"), Format::kJson);
  auto format = parseFormat("JSON\n");
  ASSERT_FALSE(format);
  EXPECT_EQ(format.error().message, "\"JSON\\n\" is not text or json");
}

}  // namespace
}  // namespace hostport::agent::log
