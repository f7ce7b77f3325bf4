#include "llvm/Support/ErrorHandling.h"

#include <stdio.h>
#include <stdlib.h>

void llvm_unreachable_internal(const char *msg, const char *file, unsigned line) {
  fprintf(stderr, "UNREACHABLE executed at %s:%u: %s\n", file, line, msg ? msg : "");
  abort();
}
