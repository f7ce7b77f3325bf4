#include "triton.h"
#include "llvm/IR/ConstantFold.h"

int64_t triton_translate_to_llvm(MlirOperation op) {
  int opcode = mlirOperationGetOpcode(op);
  int64_t lhs = mlirOperationGetOperand(op, 0);
  int64_t rhs = mlirOperationGetOperand(op, 1);
  return llvmConstantFold(opcode, lhs, rhs);
}
