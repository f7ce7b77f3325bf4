#ifndef LLVM_SUPPORT_VERSION_H
#define LLVM_SUPPORT_VERSION_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

#define LLVM_VERSION_FULL 0  /* "toy LLVM <version>git (<build type>, assertions on|off)" */
#define LLVM_VERSION_SHORT 1 /* "<major>.<minor>.<patch>" */
const char *llvmGetVersion(int what);
int llvmGetVersionMajor(void);

LLVM_C_EXTERN_C_END

#endif
