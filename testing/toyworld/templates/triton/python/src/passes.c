#include "triton.h"
#include "mlir/Pass/PassManager.h"

int triton_run_passes(MlirContext ctx, MlirOperation op) {
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  if (!pm)
    return -1;
  mlirPassManagerAddCanonicalizer(pm);
@COMMENT@  mlirPassManagerAddVerifier(pm)@SEMI@
  int status = mlirPassManagerRun(pm, op);
  mlirPassManagerDestroy(pm);
  return status;
}
