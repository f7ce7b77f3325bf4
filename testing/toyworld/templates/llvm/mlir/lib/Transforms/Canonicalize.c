#include "../IR/OperationImpl.h"
#include "llvm/IR/Opcodes.h"

int mlirCanonicalize(MlirOperation op); /* used by Pass/PassManager.c */

static int isCommutative(int opcode) {
  switch (opcode) {
  case LLVM_OP_ADD:
  case LLVM_OP_MUL:
  case LLVM_OP_AND:
  case LLVM_OP_OR:
  case LLVM_OP_XOR:
    return 1;
  default:
    return 0;
  }
}

/* Canonical form: the smaller operand of a commutative operation comes first. */
int mlirCanonicalize(MlirOperation op) {
  if (isCommutative(op->opcode) && op->operands[0] > op->operands[1]) {
    int64_t t = op->operands[0];
    op->operands[0] = op->operands[1];
    op->operands[1] = t;
  }
  return 0;
}
