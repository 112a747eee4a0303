#include "agent/service/heap.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace hostport::agent::service {

void returnFreedHeap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace hostport::agent::service
