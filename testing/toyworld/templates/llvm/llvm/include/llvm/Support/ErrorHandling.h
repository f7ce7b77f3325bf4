#ifndef LLVM_SUPPORT_ERRORHANDLING_H
#define LLVM_SUPPORT_ERRORHANDLING_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

LLVM_ATTRIBUTE_NORETURN void llvm_unreachable_internal(const char *msg, const char *file,
                                                       unsigned line);
#define llvm_unreachable(msg) llvm_unreachable_internal(msg, __FILE__, __LINE__)

LLVM_C_EXTERN_C_END

#endif
