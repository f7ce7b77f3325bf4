#ifndef LLVM_SUPPORT_STRINGREF_H
#define LLVM_SUPPORT_STRINGREF_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

typedef struct {
  const char *data;
  size_t size;
} LLVMStringRef;

LLVMStringRef llvmStringRef(const char *cstr);
int llvmStringRefEquals(LLVMStringRef a, LLVMStringRef b);
int llvmStringRefStartsWith(LLVMStringRef s, LLVMStringRef prefix);
size_t llvmStringRefFind(LLVMStringRef s, char c);
uint64_t llvmStringRefHash(LLVMStringRef s);

LLVM_C_EXTERN_C_END

#endif
