#ifndef TRITON_TOY_TRITON_H
#define TRITON_TOY_TRITON_H

#include <stdint.h>

#include "llvm/IR/Opcodes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

typedef struct {
  MlirContext ctx;
  int opcode;
} TritonKernel;

/* ir.c */
int triton_kernel_init(TritonKernel *kernel, int opcode);
void triton_kernel_destroy(TritonKernel *kernel);
int triton_kernel_eval(TritonKernel *kernel, int64_t x, int64_t y, int64_t *out);
MlirOperation triton_build_binary(MlirContext ctx, int opcode, int64_t lhs, int64_t rhs);
/* passes.c */
int triton_run_passes(MlirContext ctx, MlirOperation op);
/* llvm.c */
int64_t triton_translate_to_llvm(MlirOperation op);
/* utils.c */
int64_t triton_next_power_of_2(int64_t n);

#endif
