#ifndef LLVM_TARGET_TARGETREGISTRY_H
#define LLVM_TARGET_TARGETREGISTRY_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

typedef struct {
  const char *name;
  unsigned pointerWidth;
  unsigned numInstrs;
  unsigned schedModelVersion;
} LLVMTargetInfo;

/* The targets built into this LLVM (LLVM_TARGETS_TO_BUILD), NULL-terminated by count. */
unsigned llvmGetNumTargets(void);
const LLVMTargetInfo *llvmGetTarget(unsigned index);
const LLVMTargetInfo *llvmLookupTarget(const char *name);

LLVM_C_EXTERN_C_END

#endif
