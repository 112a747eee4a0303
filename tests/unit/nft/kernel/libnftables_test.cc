#include "nft/kernel/libnftables.h"

#include <gtest/gtest.h>

#include "nft/kernel/nft_context.h"

namespace hostport::nft::kernel {
namespace {

TEST(LibNftablesTest, LoadsEveryFunctionOnce) {
  auto first = libNftables();
  ASSERT_TRUE(first) << first.error().message;
  const LibNftables& lib = **first;
  for (const void* function :
       {reinterpret_cast<const void*>(lib.ctxNew), reinterpret_cast<const void*>(lib.ctxFree),
        reinterpret_cast<const void*>(lib.bufferOutput),
        reinterpret_cast<const void*>(lib.bufferError),
        reinterpret_cast<const void*>(lib.outputBuffer),
        reinterpret_cast<const void*>(lib.errorBuffer),
        reinterpret_cast<const void*>(lib.outputFlags),
        reinterpret_cast<const void*>(lib.setOutputFlags),
        reinterpret_cast<const void*>(lib.setDryRun),
        reinterpret_cast<const void*>(lib.runCommands)}) {
    EXPECT_NE(function, nullptr);
  }
  auto second = libNftables();
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, *first) << "loaded once, then shared";
}

TEST(LibNftablesTest, AMissingLibraryIsAnErrorThatNamesIt) {
  auto missing = LibNftables::open("libnftables-hostport-test-missing.so.9");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kKernel);
  EXPECT_NE(missing.error().message.find("cannot load libnftables-hostport-test-missing.so.9"),
            std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("libnftables1"), std::string::npos);
}

TEST(LibNftablesTest, ALibraryWithoutTheFunctionsIsRefused) {
  // libc is loaded and has none of them: the error names the first one missing.
  auto wrong = LibNftables::open("libc.so.6");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("libc.so.6 has no nft_ctx_new"), std::string::npos)
      << wrong.error().message;
}

TEST(LibNftablesTest, ContextChecksCommandsThroughTheLoadedLibrary) {
  // A dry run parses and evaluates without touching the kernel's ruleset; a syntax error comes
  // back as libnftables' own message.
  auto context = NftContext::create();
  ASSERT_TRUE(context) << context.error().message;
  auto bad = context->check("add tabel ip hostport_test");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("syntax error"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace hostport::nft::kernel
