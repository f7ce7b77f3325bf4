/* Toy Triton's AMD code generator: evaluates an elementwise kernel with the AMD LLVM's
 * constant folder. Exports a C ABI only; the AMD backend dlopens it at run time. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "llvm/IR/ConstantFold.h"
#include "llvm/IR/Opcodes.h"

#define TRITON_AMD_EXPORT __attribute__((visibility("default")))

static int opcodeOf(const char *name) {
  static const struct {
    const char *name;
    int opcode;
  } ops[] = {{"add", LLVM_OP_ADD}, {"sub", LLVM_OP_SUB}, {"mul", LLVM_OP_MUL}};
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i)
    if (strcmp(ops[i].name, name) == 0)
      return ops[i].opcode;
  return -1;
}

TRITON_AMD_EXPORT int triton_amdgpu_compile(const char *op, const int64_t *x, const int64_t *y,
                                            int64_t *out, size_t n) {
  int opcode = opcodeOf(op);
  if (opcode < 0)
    return 1;
  for (size_t i = 0; i < n; ++i) {
#ifdef LLVM_FOLD_DEFAULT
    out[i] = llvmConstantFold(opcode, x[i], y[i], LLVM_FOLD_DEFAULT);
#else
    out[i] = llvmConstantFold(opcode, x[i], y[i]);
#endif
  }
  return 0;
}

TRITON_AMD_EXPORT const char *triton_amdgpu_revision(void) { return TRITON_AMD_LLVM_REVISION; }
