#ifndef LLVM_IR_OPCODES_H
#define LLVM_IR_OPCODES_H

/* Binary opcodes of the toy IR. */
enum LLVMToyOpcode {
  LLVM_OP_ADD = 1,
  LLVM_OP_SUB,
  LLVM_OP_MUL,
  LLVM_OP_AND,
  LLVM_OP_OR,
  LLVM_OP_XOR,
  LLVM_OP_SHL,
  LLVM_OP_MAX
};

#endif
