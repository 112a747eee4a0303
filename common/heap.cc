#include "common/heap.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace hostport {

void returnFreedHeap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

void configureHeap() {
#ifdef __GLIBC__
  constexpr int kTrimThreshold = 1 << 20;
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
#endif
}

}  // namespace hostport
