#include "triton.h"

int triton_kernel_init(TritonKernel *kernel, int opcode) {
  kernel->opcode = opcode;
  kernel->ctx = mlirContextCreate();
  return kernel->ctx ? 0 : -1;
}

void triton_kernel_destroy(TritonKernel *kernel) {
  mlirContextDestroy(kernel->ctx);
  kernel->ctx = NULL;
}

MlirOperation triton_build_binary(MlirContext ctx, int opcode, int64_t lhs, int64_t rhs) {
  return mlirBuildOp(ctx, opcode, lhs, rhs);
}

int triton_kernel_eval(TritonKernel *kernel, int64_t x, int64_t y, int64_t *out) {
  MlirOperation op = triton_build_binary(kernel->ctx, kernel->opcode, x, y);
  if (!op)
    return -1;
  if (triton_run_passes(kernel->ctx, op) != 0)
    return -1;
  *out = triton_translate_to_llvm(op);
  return 0;
}
