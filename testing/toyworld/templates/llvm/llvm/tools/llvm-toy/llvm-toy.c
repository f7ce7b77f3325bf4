/* llvm-toy: print the version, the targets, or fold a constant expression.
 *   llvm-toy --version
 *   llvm-toy --targets
 *   llvm-toy fold add|sub|mul|and|or|xor|shl A B
 */
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/ConstantFold.h"
#include "llvm/Support/Version.h"
#include "llvm/Target/TargetRegistry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kNames[] = {"", "add", "sub", "mul", "and", "or", "xor", "shl"};

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("%s\n", @VERSION_CALL@);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--targets") == 0) {
    for (unsigned i = 0; i < llvmGetNumTargets(); ++i)
      printf("%s\n", llvmGetTarget(i)->name);
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "fold") == 0) {
    for (int op = LLVM_OP_ADD; op < LLVM_OP_MAX; ++op) {
      if (strcmp(argv[2], kNames[op]) == 0) {
        long long a = atoll(argv[3]), b = atoll(argv[4]);
        printf("%lld\n", (long long)@FOLD_CALL@);
        return 0;
      }
    }
  }
  fprintf(stderr, "usage: llvm-toy --version | --targets | fold OP A B\n");
  return 2;
}
