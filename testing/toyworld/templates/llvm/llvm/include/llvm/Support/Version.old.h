#ifndef LLVM_SUPPORT_VERSION_H
#define LLVM_SUPPORT_VERSION_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

/* "toy LLVM <major>.<minor>.<patch>git (<build type>, assertions on|off)" */
const char *llvmGetVersionString(void);
int llvmGetVersionMajor(void);

LLVM_C_EXTERN_C_END

#endif
