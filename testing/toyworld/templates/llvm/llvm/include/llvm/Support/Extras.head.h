#ifndef LLVM_SUPPORT_EXTRAS_H
#define LLVM_SUPPORT_EXTRAS_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

int64_t llvmExtraIdentity(int64_t x);
