#include "OperationImpl.h"

#include <assert.h>

MlirOperation @BUILD@(MlirContext ctx, int opcode, int64_t lhs, int64_t rhs) {
  MlirOperation op = (MlirOperation)mlirContextAllocate(ctx, sizeof(struct MlirOperationImpl));
  if (!op)
    return NULL;
  op->ctx = ctx;
  op->opcode = opcode;
  op->verified = 0;
  op->operands[0] = lhs;
  op->operands[1] = rhs;
  return op;
}

int mlirOperationGetOpcode(MlirOperation op) { return op->opcode; }

int64_t mlirOperationGetOperand(MlirOperation op, unsigned index) {
  assert(index < 2 && "operand index out of range");
  return op->operands[index];
}

int mlirOperationIsVerified(MlirOperation op) { return op->verified; }
