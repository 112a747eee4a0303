#include "nft/kernel/nft_context.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace hostport::nft::kernel {
namespace {

std::string text(int errnum) { return std::strerror(errnum); }

TEST(NftContextTest, ReadsTheErrnoOfAFailedKernelCommand) {
  const std::string exists = "Error: Could not process rule: " + text(EEXIST) +
                             "\nadd element ip hostport ports { 1 : 1.2.3.5 }\n"
                             "                                ^";
  EXPECT_EQ(nftErrorCause(exists), std::errc::file_exists);
  EXPECT_EQ(nftErrorCause("Error: Could not process rule: " + text(EBUSY)),
            std::errc::device_or_resource_busy);
}

TEST(NftContextTest, ReadsEveryErrnoByItsText) {
  for (int errnum = 1; errnum < 256; ++errnum) {
    // Two errnos may share a text (an alias); the lowest one of the text is the cause.
    int first = 1;
    while (text(first) != text(errnum)) ++first;
    const std::error_code cause = nftErrorCause("Error: Could not process rule: " + text(errnum));
    EXPECT_EQ(cause, std::error_code(first, std::generic_category())) << text(errnum);
    EXPECT_EQ(nftErrorCause("Error: " + text(errnum) + "; did you mean x"), cause) << errnum;
  }
}

TEST(NftContextTest, ReadsTheErrnoOfAnObjectMissingFromTheCache) {
  EXPECT_EQ(
      nftErrorCause("Error: " + text(ENOENT) + "\nlist table ip hostport\n              ^^^^^^^^"),
      std::errc::no_such_file_or_directory);
  // With a suggestion after the reason, and with the location prefix of named input.
  EXPECT_EQ(nftErrorCause("Error: " + text(ENOENT) +
                          "; did you mean table 'hostport' in family ip?\ndelete table ip hp"),
            std::errc::no_such_file_or_directory);
  EXPECT_EQ(nftErrorCause("/dev/stdin:1:19-29: Error: " + text(ENOENT) + "; did you mean"),
            std::errc::no_such_file_or_directory);
}

TEST(NftContextTest, ReadsTheFirstErrorThatNamesAnErrno) {
  const std::string two =
      "Error: syntax error, unexpected junk\njunk\n^^^^\nError: Could not "
      "process rule: " +
      text(ENOENT) + "\ndelete element ip hostport ports { 2 }";
  EXPECT_EQ(nftErrorCause(two), std::errc::no_such_file_or_directory);
  const std::string first = "Error: Could not process rule: " + text(EEXIST) +
                            "\nError: Could not process rule: " + text(ENOENT);
  EXPECT_EQ(nftErrorCause(first), std::errc::file_exists);
}

TEST(NftContextTest, TextThatOnlyMentionsAnErrnoHasNoCause) {
  // Only the reason of an "Error: " line counts, never the same words elsewhere in the text: a
  // comment, an owner or an extack-like remark cannot turn into "not found".
  EXPECT_FALSE(nftErrorCause("Error: syntax error, unexpected string \"" + text(ENOENT) + "\""));
  EXPECT_FALSE(nftErrorCause("add element ip hostport ports { 1 comment \"" + text(EEXIST) +
                             "\" }\nError: conflicting intervals specified"));
  EXPECT_FALSE(
      nftErrorCause("Error: syntax error, unexpected newline\nadd rule ip hostport c "
                    "meta mark 1 comment \"Error: " +
                    text(ENOENT) + "\n"));
  EXPECT_FALSE(nftErrorCause("x Error: " + text(ENOENT)));
  EXPECT_FALSE(nftErrorCause(text(ENOENT)));
  EXPECT_FALSE(nftErrorCause("Error: " + text(ENOENT) + " or so"));
  EXPECT_FALSE(nftErrorCause("libnftables failed"));
  EXPECT_FALSE(nftErrorCause(""));
}

TEST(NftContextTest, NotFoundAndAlreadyExistsAreDecidedByTheCauseAlone) {
  const Error missing{ErrorCode::kKernel,
                      "reworded",
                      {},
                      std::make_error_code(std::errc::no_such_file_or_directory)};
  EXPECT_TRUE(isNotFound(missing));
  EXPECT_FALSE(isAlreadyExists(missing));

  const Error held{ErrorCode::kKernel,
                   "adding set elements: ...",
                   {},
                   std::make_error_code(std::errc::file_exists)};
  EXPECT_TRUE(isAlreadyExists(held));
  EXPECT_FALSE(isNotFound(held));

  // The message may say anything, the kernel's extack included: without a cause it decides
  // nothing.
  const Error wordsOnly{ErrorCode::kKernel, text(ENOENT) + " (" + text(EEXIST) + ")", {}, {}};
  EXPECT_FALSE(isNotFound(wordsOnly));
  EXPECT_FALSE(isAlreadyExists(wordsOnly));
  const Error otherCause{ErrorCode::kKernel,
                         "adding set elements: " + text(ENOENT),
                         {},
                         std::make_error_code(std::errc::permission_denied)};
  EXPECT_FALSE(isNotFound(otherCause));
}

TEST(NftContextTest, ASyntaxErrorFromLibnftablesHasNoCause) {
  auto context = NftContext::create();
  ASSERT_TRUE(context) << context.error().message;
  const auto checked = context->check("this is not an nft command");
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().code, ErrorCode::kKernel);
  EXPECT_NE(checked.error().message.find("Error: "), std::string::npos) << checked.error().message;
  EXPECT_FALSE(checked.error().cause) << checked.error().message;
}

}  // namespace
}  // namespace hostport::nft::kernel
