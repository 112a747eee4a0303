#include "kube/bearer_token.h"

#include <sys/stat.h>

#include <cerrno>

#include "common/atomic_file.h"

namespace hostport::kube {

Result<std::string> BearerToken::current() {
  if (path_.empty()) return token_;
  struct stat info {};
  // stat follows the symlinks the kubelet swaps (..data), so a rotation shows as a new inode.
  if (::stat(path_.c_str(), &info) != 0) {
    return failSystem(ErrorCode::kIo, "cannot stat the token file " + path_, errno);
  }
  const bool unchanged = reads_ > 0 && info.st_ino == inode_ && info.st_size == size_ &&
                         info.st_mtim.tv_sec == mtime_.tv_sec &&
                         info.st_mtim.tv_nsec == mtime_.tv_nsec;
  if (unchanged) return token_;
  HOSTPORT_TRY(auto text, readSmallFile(path_, 64 * 1024));
  if (!text) return fail(ErrorCode::kNotFound, "the token file " + path_ + " is gone");
  std::string token = std::move(*text);
  const auto first = token.find_first_not_of(" \t\r\n");
  const auto last = token.find_last_not_of(" \t\r\n");
  token = first == std::string::npos ? std::string() : token.substr(first, last - first + 1);
  if (token.empty())
    return fail(ErrorCode::kInvalidArgument, "the token file " + path_ + " is empty");
  token_ = std::move(token);
  inode_ = info.st_ino;
  size_ = info.st_size;
  mtime_ = info.st_mtim;
  ++reads_;
  return token_;
}

}  // namespace hostport::kube
