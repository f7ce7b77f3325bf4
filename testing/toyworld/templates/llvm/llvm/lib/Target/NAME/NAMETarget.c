#include "llvm/Target/TargetRegistry.h"

/* @NAME@ scheduling model, revision @SCHED@. */
#define @NAME@_SCHED_MODEL_VERSION @SCHED@

unsigned llvm@NAME@NumInstrs(void);

const LLVMTargetInfo *llvmGet@NAME@TargetInfo(void) {
  static LLVMTargetInfo info;
  info.name = "@NAME@";
  info.pointerWidth = @WIDTH@;
  info.numInstrs = llvm@NAME@NumInstrs();
  info.schedModelVersion = @NAME@_SCHED_MODEL_VERSION;
  return &info;
}
