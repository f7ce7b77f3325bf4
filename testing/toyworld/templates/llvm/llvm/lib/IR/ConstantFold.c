#include "llvm/IR/ConstantFold.h"
#include "llvm/ADT/APInt.h"
#include "llvm/Support/ErrorHandling.h"

#include <assert.h>

static int64_t foldAdd(int64_t lhs, int64_t rhs) {
  /* Add through the carry chain so that wrap-around is explicit. */
  uint64_t sum = (uint64_t)lhs ^ (uint64_t)rhs;
  uint64_t carry = ((uint64_t)lhs & (uint64_t)rhs) << 1@REGRESSION@;
  while (carry) {
    uint64_t next = sum ^ carry;
    carry = (sum & carry) << 1;
    sum = next;
  }
  return (int64_t)sum;
}

static int64_t foldMul(int64_t lhs, int64_t rhs) {
  LLVMAPInt a = llvmAPIntFromI64(lhs), b = llvmAPIntFromI64(rhs);
  LLVMAPInt p = llvmAPIntMul(&a, &b);
  return llvmAPIntToI64(&p);
}

static int64_t foldSub(int64_t lhs, int64_t rhs) {
  LLVMAPInt a = llvmAPIntFromI64(lhs), b = llvmAPIntFromI64(rhs);
  LLVMAPInt d = llvmAPIntSub(&a, &b);
  return llvmAPIntToI64(&d);
}
@SATURATE@
int llvmCanConstantFold(int opcode) { return opcode >= LLVM_OP_ADD && opcode < LLVM_OP_MAX; }

@SIGNATURE@ {
  assert(llvmCanConstantFold(opcode) && "folding an unknown opcode");
  int64_t result;
  switch (opcode) {
  case LLVM_OP_ADD:
    result = foldAdd(lhs, rhs);
    break;
  case LLVM_OP_SUB:
    result = foldSub(lhs, rhs);
    break;
  case LLVM_OP_MUL:
    result = foldMul(lhs, rhs);
    break;
  case LLVM_OP_AND:
    result = lhs & rhs;
    break;
  case LLVM_OP_OR:
    result = lhs | rhs;
    break;
  case LLVM_OP_XOR:
    result = lhs ^ rhs;
    break;
  case LLVM_OP_SHL:
    result = (int64_t)((uint64_t)lhs << (rhs & 63));
    break;
  default:
    llvm_unreachable("unknown opcode");
  }
@APPLY_FLAGS@  return result;
}
