#ifndef LLVM_SUPPORT_HASHING_H
#define LLVM_SUPPORT_HASHING_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

uint64_t llvmHashBytes(const void *data, size_t size);
uint64_t llvmHashCombine(uint64_t seed, uint64_t value);

LLVM_C_EXTERN_C_END

#endif
