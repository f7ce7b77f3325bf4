#ifndef MLIR_IR_BUILDERS_H
#define MLIR_IR_BUILDERS_H

#include "mlir/IR/MLIRContext.h"

LLVM_C_EXTERN_C_BEGIN

typedef struct MlirOperationImpl *MlirOperation;

@DOC@
MlirOperation @BUILD@(MlirContext ctx, int opcode, int64_t lhs, int64_t rhs);
int mlirOperationGetOpcode(MlirOperation op);
int64_t mlirOperationGetOperand(MlirOperation op, unsigned index);
/* Set by the verifier pass of mlirPassManager. */
int mlirOperationIsVerified(MlirOperation op);

LLVM_C_EXTERN_C_END

#endif
