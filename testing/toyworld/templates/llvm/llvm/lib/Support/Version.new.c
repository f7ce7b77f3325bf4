#include "llvm/Support/Version.h"
#include "llvm/Config/llvm-config.h"

#include <stdio.h>

#define LLVM_STR2(x) #x
#define LLVM_STR(x) LLVM_STR2(x)
#define LLVM_NUMBER                                                                        \
  LLVM_STR(LLVM_VERSION_MAJOR) "." LLVM_STR(LLVM_VERSION_MINOR) "." LLVM_STR(LLVM_VERSION_PATCH)

const char *llvmGetVersion(int what) {
  if (what == LLVM_VERSION_SHORT)
    return LLVM_NUMBER;
  return "toy LLVM " LLVM_NUMBER "git (" LLVM_BUILD_TYPE ", assertions "
#if LLVM_ENABLE_ASSERTIONS
         "on"
#else
         "off"
#endif
         ")";
}

int llvmGetVersionMajor(void) { return LLVM_VERSION_MAJOR; }
