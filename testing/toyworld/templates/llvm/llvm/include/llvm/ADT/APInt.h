#ifndef LLVM_ADT_APINT_H
#define LLVM_ADT_APINT_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

#define LLVM_APINT_WORDS 4

/* A fixed-width (256-bit) two's complement integer. */
typedef struct {
  uint64_t words[LLVM_APINT_WORDS];
} LLVMAPInt;

LLVMAPInt llvmAPIntFromI64(int64_t value);
int64_t llvmAPIntToI64(const LLVMAPInt *value);
LLVMAPInt llvmAPIntAdd(const LLVMAPInt *a, const LLVMAPInt *b);
LLVMAPInt llvmAPIntSub(const LLVMAPInt *a, const LLVMAPInt *b);
LLVMAPInt llvmAPIntMul(const LLVMAPInt *a, const LLVMAPInt *b);
LLVMAPInt llvmAPIntShl(const LLVMAPInt *a, unsigned amount);
int llvmAPIntCompare(const LLVMAPInt *a, const LLVMAPInt *b);
unsigned llvmAPIntCountLeadingZeros(const LLVMAPInt *a);

LLVM_C_EXTERN_C_END

#endif
