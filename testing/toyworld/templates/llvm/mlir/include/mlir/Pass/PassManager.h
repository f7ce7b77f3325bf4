#ifndef MLIR_PASS_PASSMANAGER_H
#define MLIR_PASS_PASSMANAGER_H

#include "mlir/IR/Builders.h"

LLVM_C_EXTERN_C_BEGIN

typedef struct MlirPassManagerImpl *MlirPassManager;

MlirPassManager mlirPassManagerCreate(MlirContext ctx);
void mlirPassManagerDestroy(MlirPassManager pm);
void mlirPassManagerAddCanonicalizer(MlirPassManager pm);
void mlirPassManagerAddVerifier(MlirPassManager pm);
/* Runs the passes on `op`; returns 0 on success. */
int @RUN@(MlirPassManager pm, MlirOperation op);

LLVM_C_EXTERN_C_END

#endif
