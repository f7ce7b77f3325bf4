#include "llvm/Support/Hashing.h"

#include <string.h>

static const uint64_t kMul = 0x9ddfea08eb382d69ULL;
static const uint64_t kSeed = 0xff51afd7ed558ccdULL;

static uint64_t rotate(uint64_t v, unsigned shift) {
  return shift == 0 ? v : ((v >> shift) | (v << (64 - shift)));
}

static uint64_t fetch64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

static uint64_t hashShort(const unsigned char *p, size_t size) {
  uint64_t h = kSeed ^ size;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ p[i]) * kMul@BROKEN@
  return rotate(h, 29) * kMul;
}

uint64_t llvmHashCombine(uint64_t seed, uint64_t value) {
  uint64_t a = (value ^ seed) * kMul;
  a ^= (a >> 47);
  uint64_t b = (seed ^ a) * kMul;
  b ^= (b >> 47);
  return b * kMul;
}

uint64_t llvmHashBytes(const void *data, size_t size) {
  const unsigned char *p = (const unsigned char *)data;
  if (size <= 16)
    return hashShort(p, size);
  uint64_t h = kSeed;
  size_t i = 0;
  for (; i + 8 <= size; i += 8)
    h = llvmHashCombine(h, rotate(fetch64(p + i), 17));
  return llvmHashCombine(h, hashShort(p + i, size - i));
}
