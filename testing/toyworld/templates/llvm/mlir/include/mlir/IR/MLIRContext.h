#ifndef MLIR_IR_MLIRCONTEXT_H
#define MLIR_IR_MLIRCONTEXT_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

typedef struct MlirContextImpl *MlirContext;

@CREATE_DECL@
void mlirContextDestroy(MlirContext ctx);
int mlirContextIsMultithreaded(MlirContext ctx);
/* Memory owned by the context, freed by mlirContextDestroy. */
void *mlirContextAllocate(MlirContext ctx, size_t size);
size_t mlirContextGetNumAllocations(MlirContext ctx);

LLVM_C_EXTERN_C_END

#endif
