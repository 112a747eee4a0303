#pragma once
// The whole of a small file as a test reads it to compare: its bytes as they are, "" when it
// cannot be read (the comparison that follows says what was expected).

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace hostport::test {

inline std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace hostport::test
