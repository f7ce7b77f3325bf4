#include "llvm/Support/StringRef.h"
#include "llvm/Support/Hashing.h"

#include <string.h>

LLVMStringRef llvmStringRef(const char *cstr) {
  LLVMStringRef s;
  s.data = cstr;
  s.size = cstr ? strlen(cstr) : 0;
  return s;
}

int llvmStringRefEquals(LLVMStringRef a, LLVMStringRef b) {
  return a.size == b.size && (a.size == 0 || memcmp(a.data, b.data, a.size) == 0);
}

int llvmStringRefStartsWith(LLVMStringRef s, LLVMStringRef prefix) {
  return s.size >= prefix.size && memcmp(s.data, prefix.data, prefix.size) == 0;
}

size_t llvmStringRefFind(LLVMStringRef s, char c) {
  const void *p = s.size ? memchr(s.data, c, s.size) : NULL;
  return p ? (size_t)((const char *)p - s.data) : (size_t)-1;
}

uint64_t llvmStringRefHash(LLVMStringRef s) {
  return llvmHashBytes(s.data, s.size);
}
