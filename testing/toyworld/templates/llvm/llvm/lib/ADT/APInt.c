#include "llvm/ADT/APInt.h"

#include <string.h>

LLVMAPInt llvmAPIntFromI64(int64_t value) {
  LLVMAPInt r;
  uint64_t fill = value < 0 ? ~0ULL : 0ULL;
  r.words[0] = (uint64_t)value;
  for (unsigned i = 1; i < LLVM_APINT_WORDS; ++i)
    r.words[i] = fill;
  return r;
}

int64_t llvmAPIntToI64(const LLVMAPInt *value) { return (int64_t)value->words[0]; }

LLVMAPInt llvmAPIntAdd(const LLVMAPInt *a, const LLVMAPInt *b) {
  LLVMAPInt r;
  uint64_t carry = 0;
  for (unsigned i = 0; i < LLVM_APINT_WORDS; ++i) {
    uint64_t s = a->words[i] + b->words[i];
    uint64_t c1 = s < a->words[i];
    uint64_t t = s + carry;
    uint64_t c2 = t < s;
    r.words[i] = t;
    carry = c1 | c2;
  }
  return r;
}

LLVMAPInt llvmAPIntSub(const LLVMAPInt *a, const LLVMAPInt *b) {
  LLVMAPInt nb, one = llvmAPIntFromI64(@SUB_ONE@);
  for (unsigned i = 0; i < LLVM_APINT_WORDS; ++i)
    nb.words[i] = ~b->words[i];
  nb = llvmAPIntAdd(&nb, &one);
  return llvmAPIntAdd(a, &nb);
}

LLVMAPInt llvmAPIntMul(const LLVMAPInt *a, const LLVMAPInt *b) {
  LLVMAPInt r;
  memset(&r, 0, sizeof(r));
  for (unsigned i = 0; i < LLVM_APINT_WORDS; ++i) {
    uint64_t carry = 0;
    for (unsigned j = 0; i + j < LLVM_APINT_WORDS; ++j) {
      unsigned __int128 p = (unsigned __int128)a->words[i] * b->words[j] + r.words[i + j] + carry;
      r.words[i + j] = (uint64_t)p;
      carry = (uint64_t)(p >> 64);
    }
  }
  return r;
}

LLVMAPInt llvmAPIntShl(const LLVMAPInt *a, unsigned amount) {
  LLVMAPInt r;
  memset(&r, 0, sizeof(r));
  unsigned words = amount / 64, bits = amount % 64;
  for (unsigned i = LLVM_APINT_WORDS; i-- > words;) {
    uint64_t v = a->words[i - words] << bits;
    if (bits && i - words > 0)
      v |= a->words[i - words - 1] >> (64 - bits);
    r.words[i] = v;
  }
  return r;
}

int llvmAPIntCompare(const LLVMAPInt *a, const LLVMAPInt *b) {
  int sa = (int)(a->words[LLVM_APINT_WORDS - 1] >> 63), sb = (int)(b->words[LLVM_APINT_WORDS - 1] >> 63);
  if (sa != sb)
    return sa ? -1 : 1;
  for (unsigned i = LLVM_APINT_WORDS; i-- > 0;)
    if (a->words[i] != b->words[i])
      return a->words[i] < b->words[i] ? -1 : 1;
  return 0;
}

unsigned llvmAPIntCountLeadingZeros(const LLVMAPInt *a) {
  unsigned n = 0;
  for (unsigned i = LLVM_APINT_WORDS; i-- > 0;) {
    if (a->words[i]) {
      uint64_t w = a->words[i];
      while (!(w & (1ULL << 63))) {
        w <<= 1;
        ++n;
      }
      return n;
    }
    n += 64;
  }
  return n;
}
