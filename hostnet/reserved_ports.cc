#include "hostnet/reserved_ports.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <system_error>

#include "common/quote.h"
#include "common/unique_fd.h"

namespace hostport::hostnet {
namespace {

// The kernel's own text for the worst case (every other port) is about 200 KB.
constexpr size_t kMaxSysctlText = 1 << 20;

std::string_view trim(std::string_view text, std::string_view characters) {
  const size_t begin = text.find_first_not_of(characters);
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(characters);
  return text.substr(begin, end - begin + 1);
}

/// A whole item of decimal digits, 0..65535.
std::optional<uint16_t> parsePort(std::string_view digits) {
  if (digits.empty() || !std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

/// How much of a port list an error message quotes: the lists can be 200 KB long.
constexpr size_t kMaxQuotedBytes = 32;

Result<std::string> readText(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int error = errno;
    return failSystem(ErrorCode::kKernel, "cannot open " + path + " for reading", error);
  }
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      return failSystem(ErrorCode::kKernel, "cannot read " + path, error);
    }
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxSysctlText) return fail(ErrorCode::kKernel, path + " is too large");
  }
}

Result<void> writeText(const std::string& path, const std::string& text) {
  // No O_CREAT: a missing sysctl is an error, not a file to create.
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd.valid()) {
    const int error = errno;
    return failSystem(ErrorCode::kKernel, "cannot open " + path + " for writing", error);
  }
  // A sysctl takes its value in one write(2); a short write means it took only part of it.
  ssize_t written = -1;
  do {
    written = ::write(fd.get(), text.data(), text.size());
  } while (written < 0 && errno == EINTR);
  if (written < 0) {
    const int error = errno;
    return failSystem(ErrorCode::kKernel,
                      "cannot write " + quoteText(text, kMaxQuotedBytes) + " to " + path, error);
  }
  if (static_cast<size_t>(written) != text.size()) {
    return fail(ErrorCode::kKernel,
                "short write of " + quoteText(text, kMaxQuotedBytes) + " to " + path);
  }
  return {};
}

}  // namespace

Result<std::vector<PortRange>> parseReservedPorts(std::string_view text) {
  if (text.size() > kMaxSysctlText) {
    return fail(ErrorCode::kDecode,
                "reserved port list is too long (" + std::to_string(text.size()) + " bytes)");
  }
  // Leading blanks and trailing blanks/newlines around the whole list; inside it, only blanks
  // around items.
  const std::string_view list = trim(text, " \t\n");
  std::vector<PortRange> ranges;
  if (list.empty()) return ranges;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string_view raw = list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const std::string_view item = trim(raw, " \t");
    const auto bad = [&](const std::string& why) {
      return fail(ErrorCode::kDecode,
                  "bad reserved port item " + quoteText(item, kMaxQuotedBytes) + ": " + why);
    };
    if (item.empty()) return bad("empty item");
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      const auto port = parsePort(item);
      if (!port) return bad("not a port number (0-65535)");
      ranges.emplace_back(*port, *port);
    } else {
      const auto first = parsePort(item.substr(0, dash));
      const auto last = parsePort(item.substr(dash + 1));
      if (!first || !last) return bad("not a range of port numbers (a-b, 0-65535)");
      if (*first > *last) return bad("reversed range");
      ranges.emplace_back(*first, *last);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ranges;
}

std::vector<PortRange> normalizePortRanges(std::vector<PortRange> ranges) {
  std::erase_if(ranges, [](const PortRange& r) { return r.first > r.second; });
  std::ranges::sort(ranges);
  std::vector<PortRange> merged;
  merged.reserve(ranges.size());
  for (const PortRange& range : ranges) {
    // Adjacent counts as overlapping: {1-5, 6-9} is {1-9}. Widen before adding 1 (65535 + 1).
    if (!merged.empty() && static_cast<uint32_t>(range.first) <= merged.back().second + 1u) {
      merged.back().second = std::max(merged.back().second, range.second);
    } else {
      merged.push_back(range);
    }
  }
  return merged;
}

std::vector<PortRange> mergePortRanges(const std::vector<PortRange>& existing,
                                       const std::vector<PortRange>& added) {
  std::vector<PortRange> all = existing;
  all.insert(all.end(), added.begin(), added.end());
  return normalizePortRanges(std::move(all));
}

std::string formatReservedPorts(const std::vector<PortRange>& ranges) {
  std::string text;
  for (const PortRange& range : ranges) {
    if (!text.empty()) text.push_back(',');
    text += std::to_string(range.first);
    if (range.second != range.first) text += "-" + std::to_string(range.second);
  }
  return text;
}

Result<void> reserveLocalPorts(const std::vector<PortRange>& ranges, const std::string& procPath) {
  for (const PortRange& range : ranges) {
    if (range.first > range.second) {
      return fail(ErrorCode::kInvalidArgument, "cannot reserve reversed port range " +
                                                   std::to_string(range.first) + "-" +
                                                   std::to_string(range.second));
    }
  }
  const std::string what =
      "reserve local ports " + formatReservedPorts(normalizePortRanges(ranges));
  auto current = readText(procPath);
  if (!current) return withContext(std::move(current.error()), what);
  auto existing = parseReservedPorts(*current);
  if (!existing) return withContext(std::move(existing.error()), what + ": " + procPath);

  const std::vector<PortRange> before = normalizePortRanges(*existing);
  const std::vector<PortRange> wanted = mergePortRanges(before, ranges);
  if (wanted == before) return {};  // already reserved: leave the sysctl alone

  if (auto written = writeText(procPath, formatReservedPorts(wanted) + "\n"); !written) {
    return withContext(std::move(written.error()), what);
  }
  // Read back: the kernel is the judge of what it keeps.
  auto after = readText(procPath);
  if (!after) return withContext(std::move(after.error()), what);
  auto kept = parseReservedPorts(*after);
  if (!kept) return withContext(std::move(kept.error()), what + ": " + procPath);
  const std::vector<PortRange> keptRanges = normalizePortRanges(*kept);
  if (mergePortRanges(keptRanges, ranges) != keptRanges) {
    return fail(ErrorCode::kKernel, what + ": " + procPath + " reads " +
                                        quoteText(*after, kMaxQuotedBytes) + " after the write");
  }
  return {};
}

}  // namespace hostport::hostnet
