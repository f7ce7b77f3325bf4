/* Generated source @I@ (a stand-in for the bulk of LLVM's sources). */
#include "llvm/Support/Compiler.h"

int64_t llvmGenerated@I@(int64_t x);

static int64_t mix@I@(int64_t x, int64_t k) {
  for (int i = 0; i < 3; ++i)
    x = (x * 6364136223846793005LL + k) ^ (x >> 29);
  return x;
}

int64_t llvmGenerated@I@(int64_t x) {
  int64_t acc = 0;
  for (int64_t k = 0; k < @N@; ++k)
    acc += mix@I@(x + k, @K@);
  return acc;
}
