#ifndef LLVM_IR_CONSTANTFOLD_H
#define LLVM_IR_CONSTANTFOLD_H

#include "llvm/IR/Opcodes.h"
#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

/* Folds `lhs <opcode> rhs` on 64-bit integer constants (wrapping on overflow). */
int64_t llvmConstantFold(int opcode, int64_t lhs, int64_t rhs);
/* Whether llvmConstantFold knows the opcode. */
int llvmCanConstantFold(int opcode);

LLVM_C_EXTERN_C_END

#endif
