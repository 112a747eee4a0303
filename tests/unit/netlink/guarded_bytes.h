#pragma once
// Bytes that end right where an inaccessible page begins, so a parser that reads past the end of
// its input crashes in every build, not only under ASan: the regression tests of the fuzzers'
// out-of-bounds findings (docs/fuzzing.md) use it.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

namespace hostport::test {

class GuardedBytes {
 public:
  /// A copy of `bytes` (at most a page) whose last byte is followed by a PROT_NONE page.
  explicit GuardedBytes(const std::vector<std::byte>& bytes)
      : page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {
    if (bytes.size() > page_) throw std::length_error("GuardedBytes holds at most a page");
    void* mapping =
        ::mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<std::byte*>(mapping);
    ::mprotect(base_ + page_, page_, PROT_NONE);
    data_ = base_ + page_ - bytes.size();
    std::memcpy(data_, bytes.data(), bytes.size());
    size_ = bytes.size();
  }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  ~GuardedBytes() { ::munmap(base_, 2 * page_); }

  std::span<const std::byte> span() const { return {data_, size_}; }

 private:
  std::size_t page_;
  std::byte* base_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace hostport::test
