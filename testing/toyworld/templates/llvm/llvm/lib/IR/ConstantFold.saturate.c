
static int64_t saturate(int opcode, int64_t lhs, int64_t rhs, int64_t wrapped) {
  LLVMAPInt a = llvmAPIntFromI64(lhs), b = llvmAPIntFromI64(rhs), exact;
  if (opcode == LLVM_OP_ADD)
    exact = llvmAPIntAdd(&a, &b);
  else if (opcode == LLVM_OP_SUB)
    exact = llvmAPIntSub(&a, &b);
  else if (opcode == LLVM_OP_MUL)
    exact = llvmAPIntMul(&a, &b);
  else
    return wrapped;
  LLVMAPInt max = llvmAPIntFromI64(INT64_MAX), min = llvmAPIntFromI64(INT64_MIN);
  if (llvmAPIntCompare(&exact, &max) > 0)
    return INT64_MAX;
  if (llvmAPIntCompare(&exact, &min) < 0)
    return INT64_MIN;
  return wrapped;
}

