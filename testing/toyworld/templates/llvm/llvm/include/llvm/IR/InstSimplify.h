#ifndef LLVM_IR_INSTSIMPLIFY_H
#define LLVM_IR_INSTSIMPLIFY_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

/* Applies simplification pattern `pattern` (0 <= pattern < llvmNumSimplifyPatterns()). */
int64_t llvmSimplify(unsigned pattern, int64_t x, int64_t y);
unsigned llvmNumSimplifyPatterns(void);

LLVM_C_EXTERN_C_END

#endif
