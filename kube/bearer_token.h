#pragma once
// The bearer token of the API requests. A projected service account token rotates (the kubelet
// rewrites the file, by default hourly, and the old one expires): the file is checked before each
// request and read again when its inode, size or mtime moved, as client-go's
// cachingTokenSource re-reads it.

#include <sys/types.h>

#include <ctime>
#include <string>

#include "common/error.h"

namespace hostport::kube {

class BearerToken {
 public:
  /// A fixed token (a kubeconfig's `token`), or the file to read (`tokenFile`, in-cluster).
  static BearerToken fixed(std::string token) { return BearerToken(std::move(token), {}); }
  static BearerToken fromFile(std::string path) { return BearerToken({}, std::move(path)); }

  /// The current token: the file's, read again when it changed. Surrounding whitespace is
  /// dropped. An error when the file cannot be read or is empty; the last token is kept then.
  Result<std::string> current();
  /// How many times the file was (re)read: for tests and the log.
  int reads() const { return reads_; }

 private:
  BearerToken(std::string token, std::string path)
      : token_(std::move(token)), path_(std::move(path)) {}

  std::string token_;
  std::string path_;
  ino_t inode_ = 0;
  off_t size_ = -1;
  timespec mtime_{};
  int reads_ = 0;
};

}  // namespace hostport::kube
