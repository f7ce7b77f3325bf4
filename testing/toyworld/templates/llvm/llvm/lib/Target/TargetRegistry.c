#include "llvm/Target/TargetRegistry.h"
#include "llvm/Support/StringRef.h"

#define LLVM_TARGET(Name) const LLVMTargetInfo *llvmGet##Name##TargetInfo(void);
#include "llvm/Config/Targets.def"

static const LLVMTargetInfo *(*const kTargets[])(void) = {
#define LLVM_TARGET(Name) llvmGet##Name##TargetInfo,
#include "llvm/Config/Targets.def"
    0};

unsigned llvmGetNumTargets(void) { return (unsigned)(sizeof(kTargets) / sizeof(kTargets[0])) - 1; }

const LLVMTargetInfo *llvmGetTarget(unsigned index) {
  return index < llvmGetNumTargets() ? kTargets[index]() : 0;
}

const LLVMTargetInfo *llvmLookupTarget(const char *name) {
  LLVMStringRef wanted = llvmStringRef(name);
  for (unsigned i = 0; i < llvmGetNumTargets(); ++i) {
    const LLVMTargetInfo *info = kTargets[i]();
    if (llvmStringRefEquals(llvmStringRef(info->name), wanted))
      return info;
  }
  return 0;
}
