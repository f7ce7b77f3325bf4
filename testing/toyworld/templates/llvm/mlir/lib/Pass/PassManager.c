#include "mlir/Pass/PassManager.h"
#include "../IR/OperationImpl.h"
#include "llvm/IR/ConstantFold.h"

#include <stdlib.h>

typedef int (*MlirPassFn)(MlirOperation op);

int mlirCanonicalize(MlirOperation op); /* Transforms/Canonicalize.c */

struct MlirPassManagerImpl {
  MlirContext ctx;
  unsigned numPasses;
  MlirPassFn passes[16];
};

static int verify(MlirOperation op) {
  if (!llvmCanConstantFold(op->opcode))
    return 1;
  op->verified = 1;
  return 0;
}

MlirPassManager mlirPassManagerCreate(MlirContext ctx) {
  MlirPassManager pm = (MlirPassManager)calloc(1, sizeof(struct MlirPassManagerImpl));
  if (pm)
    pm->ctx = ctx;
  return pm;
}

void mlirPassManagerDestroy(MlirPassManager pm) { free(pm); }

static void addPass(MlirPassManager pm, MlirPassFn fn) {
  if (pm->numPasses < sizeof(pm->passes) / sizeof(pm->passes[0]))
    pm->passes[pm->numPasses++] = fn;
}

void mlirPassManagerAddCanonicalizer(MlirPassManager pm) { addPass(pm, mlirCanonicalize); }
void mlirPassManagerAddVerifier(MlirPassManager pm) { addPass(pm, verify); }

int @RUN@(MlirPassManager pm, MlirOperation op) {
  for (unsigned i = 0; i < pm->numPasses; ++i)
    if (pm->passes[i](op) != 0)
      return 1;
  return 0;
}
