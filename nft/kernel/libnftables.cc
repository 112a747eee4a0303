#include "nft/kernel/libnftables.h"

#include <dlfcn.h>

#include <string>

namespace hostport::nft::kernel {
namespace {

/// Resolves `name` into `function`, or says which one is missing.
template <typename Function>
Result<void> resolve(void* library, const char* soname, const char* name, Function& function) {
  void* symbol = ::dlsym(library, name);
  if (symbol == nullptr) {
    return fail(ErrorCode::kKernel,
                std::string(soname) + " has no " + name + " (libnftables too old?)");
  }
  function = reinterpret_cast<Function>(symbol);
  return {};
}

}  // namespace

Result<LibNftables> LibNftables::open(const char* soname) {
  void* library = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    return fail(ErrorCode::kKernel, std::string("cannot load ") + soname + ": " +
                                        (why != nullptr ? why : "unknown error") +
                                        " (install Debian's libnftables1)");
  }
  LibNftables functions{};
  for (auto resolved : {
           resolve(library, soname, "nft_ctx_new", functions.ctxNew),
           resolve(library, soname, "nft_ctx_free", functions.ctxFree),
           resolve(library, soname, "nft_ctx_buffer_output", functions.bufferOutput),
           resolve(library, soname, "nft_ctx_buffer_error", functions.bufferError),
           resolve(library, soname, "nft_ctx_get_output_buffer", functions.outputBuffer),
           resolve(library, soname, "nft_ctx_get_error_buffer", functions.errorBuffer),
           resolve(library, soname, "nft_ctx_output_get_flags", functions.outputFlags),
           resolve(library, soname, "nft_ctx_output_set_flags", functions.setOutputFlags),
           resolve(library, soname, "nft_ctx_set_dry_run", functions.setDryRun),
           resolve(library, soname, "nft_run_cmd_from_buffer", functions.runCommands),
       }) {
    if (!resolved) {
      ::dlclose(library);
      return std::unexpected(resolved.error());
    }
  }
  return functions;
}

Result<const LibNftables*> libNftables() {
  static const Result<LibNftables> loaded = LibNftables::open(LibNftables::kSoname);
  if (!loaded) return std::unexpected(loaded.error());
  return &*loaded;
}

}  // namespace hostport::nft::kernel
