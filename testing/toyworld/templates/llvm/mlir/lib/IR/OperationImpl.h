#ifndef MLIR_LIB_IR_OPERATIONIMPL_H
#define MLIR_LIB_IR_OPERATIONIMPL_H

#include "mlir/IR/Builders.h"

struct MlirOperationImpl {
  MlirContext ctx;
  int opcode;
  int verified;
  int64_t operands[2];
};

#endif
