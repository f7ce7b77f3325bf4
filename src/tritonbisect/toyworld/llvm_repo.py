"""Sources of the toy llvm-project: a small C library with LLVM's layout and build knobs.

`render(state)` gives the full tree of one commit. The history (in world.py) is a list of
states; what differs between two states is what a commit changes.

Layout: llvm/CMakeLists.txt (honours LLVM_ENABLE_PROJECTS, LLVM_TARGETS_TO_BUILD,
CMAKE_BUILD_TYPE, LLVM_ENABLE_ASSERTIONS, CMAKE_INSTALL_PREFIX), llvm/include/llvm/...,
llvm/lib/..., mlir/include/mlir/..., mlir/lib/..., llvm/tools/llvm-toy. `ninja install` puts
the headers in PREFIX/include, libToyLLVM.a (position independent) in PREFIX/lib and the
llvm-toy tool in PREFIX/bin.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field, replace

from tritonbisect.toyworld.apibreaks import BREAKS

ALL_TARGETS = ("X86", "AArch64", "NVPTX", "AMDGPU")

# Generated code that gives the build its weight (a real LLVM build is mostly TableGen output).
SIMPLIFY_PATTERNS = 800
TARGET_PATTERNS = 150


def _t(text: str, **subs: object) -> str:
    out = textwrap.dedent(text).lstrip("\n")
    for key, value in subs.items():
        out = out.replace(f"@{key}@", str(value))
    return out


@dataclass(frozen=True)
class LLVMState:
    breaks: frozenset[int] = frozenset()  # indices into BREAKS applied so far
    regression: bool = False  # constant folding of add is off by one
    broken: bool = False  # llvm/lib/Support/Hashing.c does not compile
    extras: tuple[int, ...] = ()  # llvmExtraN helpers added by filler commits
    notes: tuple[str, ...] = ()  # release notes
    mlir_notes: tuple[str, ...] = ()
    tests: tuple[int, ...] = ()  # llvm/test/CodeGen/X86/extra-N.ll
    sched: tuple[tuple[str, int], ...] = tuple((t, 1) for t in ALL_TARGETS)
    builder_doc: int = 0  # doc-comment revisions of Builders.h (a header Triton includes)
    extra_sources: int = 0

    def with_(self, **changes) -> LLVMState:
        return replace(self, **changes)


def _has(state: LLVMState, key: str) -> bool:
    return any(BREAKS[i].key == key for i in state.breaks)


# --------------------------------------------------------------------------- build files

CMAKE_LLVM = """
cmake_minimum_required(VERSION 3.20)
project(ToyLLVM VERSION 20.0.0 LANGUAGES C)

# A miniature of llvm/CMakeLists.txt: the same cache variables, the same install layout.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  message(FATAL_ERROR "No build type selected. You need to pass -DCMAKE_BUILD_TYPE=<type> "
                      "in order to configure LLVM.\\n"
                      "Available options are:\\n"
                      "  * -DCMAKE_BUILD_TYPE=Release\\n"
                      "  * -DCMAKE_BUILD_TYPE=Debug\\n"
                      "  * -DCMAKE_BUILD_TYPE=RelWithDebInfo\\n"
                      "  * -DCMAKE_BUILD_TYPE=MinSizeRel")
endif()

set(LLVM_ALL_PROJECTS "llvm;mlir")
set(LLVM_ENABLE_PROJECTS "" CACHE STRING
    "Semicolon-separated list of projects to build (${LLVM_ALL_PROJECTS}), or \\"all\\".")
set(LLVM_ALL_TARGETS @ALL_TARGETS@)
set(LLVM_TARGETS_TO_BUILD "all" CACHE STRING
    "Semicolon-separated list of targets to build, or \\"all\\".")
option(LLVM_ENABLE_ASSERTIONS "Enable assertions" OFF)

if(LLVM_ENABLE_PROJECTS STREQUAL "all")
  set(LLVM_ENABLE_PROJECTS ${LLVM_ALL_PROJECTS})
endif()
foreach(proj ${LLVM_ENABLE_PROJECTS})
  if(NOT proj IN_LIST LLVM_ALL_PROJECTS)
    message(FATAL_ERROR "${proj} isn't a known project: ${LLVM_ALL_PROJECTS}.")
  endif()
endforeach()

if(LLVM_TARGETS_TO_BUILD STREQUAL "all")
  set(LLVM_TARGETS_TO_BUILD ${LLVM_ALL_TARGETS})
endif()
foreach(target ${LLVM_TARGETS_TO_BUILD})
  if(NOT target IN_LIST LLVM_ALL_TARGETS)
    message(FATAL_ERROR "The target `${target}' does not exist.\\n"
                        "It should be one of\\n${LLVM_ALL_TARGETS}")
  endif()
endforeach()

# Assertions: NDEBUG is defined exactly when they are off, whatever the build type.
if(LLVM_ENABLE_ASSERTIONS)
  foreach(flags CMAKE_C_FLAGS_RELEASE CMAKE_C_FLAGS_RELWITHDEBINFO CMAKE_C_FLAGS_MINSIZEREL)
    string(REPLACE "-DNDEBUG" "" ${flags} "${${flags}}")
  endforeach()
  add_compile_options(-UNDEBUG)
  set(LLVM_ENABLE_ASSERTIONS_01 1)
else()
  add_compile_definitions(NDEBUG)
  set(LLVM_ENABLE_ASSERTIONS_01 0)
endif()

set(LLVM_TARGETS_DEF "")
foreach(target ${LLVM_TARGETS_TO_BUILD})
  string(APPEND LLVM_TARGETS_DEF "LLVM_TARGET(${target})\\n")
endforeach()
string(REPLACE ";" "," LLVM_TARGETS_STRING "${LLVM_TARGETS_TO_BUILD}")
set(LLVM_CONFIG_DIR ${CMAKE_CURRENT_BINARY_DIR}/include)
configure_file(include/llvm/Config/llvm-config.h.cmake
               ${LLVM_CONFIG_DIR}/llvm/Config/llvm-config.h)
configure_file(include/llvm/Config/Targets.def.in
               ${LLVM_CONFIG_DIR}/llvm/Config/Targets.def)

add_library(ToyLLVM STATIC
  lib/Support/ErrorHandling.c
  lib/Support/Hashing.c
  lib/Support/StringRef.c
  lib/Support/Version.c
  lib/Support/Extras.c
  lib/ADT/APInt.c
  lib/IR/ConstantFold.c
  lib/IR/InstSimplify.c
  lib/Target/TargetRegistry.c
)
set_target_properties(ToyLLVM PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(ToyLLVM PUBLIC
  ${CMAKE_CURRENT_SOURCE_DIR}/include ${LLVM_CONFIG_DIR})

foreach(target ${LLVM_TARGETS_TO_BUILD})
  target_sources(ToyLLVM PRIVATE
    lib/Target/${target}/${target}Target.c
    lib/Target/${target}/${target}GenInstrInfo.c)
endforeach()

file(GLOB LLVM_GENERATED_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_SOURCE_DIR}/lib/Generated/*.c)
if(LLVM_GENERATED_SOURCES)
  target_sources(ToyLLVM PRIVATE ${LLVM_GENERATED_SOURCES})
endif()

if("mlir" IN_LIST LLVM_ENABLE_PROJECTS)
  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/../mlir ${CMAKE_CURRENT_BINARY_DIR}/tools/mlir)
endif()

add_executable(llvm-toy tools/llvm-toy/llvm-toy.c)
target_link_libraries(llvm-toy PRIVATE ToyLLVM)

install(TARGETS ToyLLVM ARCHIVE DESTINATION lib)
install(TARGETS llvm-toy RUNTIME DESTINATION bin)
install(DIRECTORY include/ DESTINATION include FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(DIRECTORY ${LLVM_CONFIG_DIR}/ DESTINATION include)

message(STATUS "Toy LLVM ${PROJECT_VERSION}: projects '${LLVM_ENABLE_PROJECTS}', "
               "targets '${LLVM_TARGETS_TO_BUILD}', ${CMAKE_BUILD_TYPE}, "
               "assertions ${LLVM_ENABLE_ASSERTIONS}")
"""

CMAKE_MLIR = """
# MLIR is built into the same library when "mlir" is in LLVM_ENABLE_PROJECTS.
target_sources(ToyLLVM PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/IR/MLIRContext.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/IR/Builders.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/Pass/PassManager.c
  ${CMAKE_CURRENT_SOURCE_DIR}/lib/Transforms/Canonicalize.c
)
target_include_directories(ToyLLVM PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
install(DIRECTORY include/ DESTINATION include FILES_MATCHING PATTERN "*.h")
"""

LLVM_CONFIG_H = """
#ifndef LLVM_CONFIG_LLVM_CONFIG_H
#define LLVM_CONFIG_LLVM_CONFIG_H

/* Generated by CMake from llvm-config.h.cmake. */
#define LLVM_VERSION_MAJOR @PROJECT_VERSION_MAJOR@
#define LLVM_VERSION_MINOR @PROJECT_VERSION_MINOR@
#define LLVM_VERSION_PATCH @PROJECT_VERSION_PATCH@
#define LLVM_BUILD_TYPE "@CMAKE_BUILD_TYPE@"
#define LLVM_ENABLE_ASSERTIONS @LLVM_ENABLE_ASSERTIONS_01@
#define LLVM_TARGETS_TO_BUILD "@LLVM_TARGETS_STRING@"

#endif
"""

TARGETS_DEF_IN = """
/* Generated by CMake: one LLVM_TARGET(Name) per target in LLVM_TARGETS_TO_BUILD. */
#ifndef LLVM_TARGET
#error Please define the macro LLVM_TARGET(TargetName)
#endif
@LLVM_TARGETS_DEF@
#undef LLVM_TARGET
"""

# --------------------------------------------------------------------------- llvm headers

COMPILER_H = """
#ifndef LLVM_SUPPORT_COMPILER_H
#define LLVM_SUPPORT_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define LLVM_LIKELY(x) __builtin_expect(!!(x), 1)
#define LLVM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LLVM_ATTRIBUTE_UNUSED __attribute__((__unused__))
#define LLVM_ATTRIBUTE_NORETURN __attribute__((__noreturn__))
#else
#define LLVM_LIKELY(x) (x)
#define LLVM_UNLIKELY(x) (x)
#define LLVM_ATTRIBUTE_UNUSED
#define LLVM_ATTRIBUTE_NORETURN
#endif

#ifdef __cplusplus
#define LLVM_C_EXTERN_C_BEGIN extern "C" {
#define LLVM_C_EXTERN_C_END }
#else
#define LLVM_C_EXTERN_C_BEGIN
#define LLVM_C_EXTERN_C_END
#endif

#endif
"""

ERROR_HANDLING_H = """
#ifndef LLVM_SUPPORT_ERRORHANDLING_H
#define LLVM_SUPPORT_ERRORHANDLING_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

LLVM_ATTRIBUTE_NORETURN void llvm_unreachable_internal(const char *msg, const char *file,
                                                       unsigned line);
#define llvm_unreachable(msg) llvm_unreachable_internal(msg, __FILE__, __LINE__)

LLVM_C_EXTERN_C_END

#endif
"""

HASHING_H = """
#ifndef LLVM_SUPPORT_HASHING_H
#define LLVM_SUPPORT_HASHING_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

uint64_t llvmHashBytes(const void *data, size_t size);
uint64_t llvmHashCombine(uint64_t seed, uint64_t value);

LLVM_C_EXTERN_C_END

#endif
"""

STRINGREF_H = """
#ifndef LLVM_SUPPORT_STRINGREF_H
#define LLVM_SUPPORT_STRINGREF_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

typedef struct {
  const char *data;
  size_t size;
} LLVMStringRef;

LLVMStringRef llvmStringRef(const char *cstr);
int llvmStringRefEquals(LLVMStringRef a, LLVMStringRef b);
int llvmStringRefStartsWith(LLVMStringRef s, LLVMStringRef prefix);
size_t llvmStringRefFind(LLVMStringRef s, char c);
uint64_t llvmStringRefHash(LLVMStringRef s);

LLVM_C_EXTERN_C_END

#endif
"""

VERSION_H_OLD = """
#ifndef LLVM_SUPPORT_VERSION_H
#define LLVM_SUPPORT_VERSION_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

/* "toy LLVM <major>.<minor>.<patch>git (<build type>, assertions on|off)" */
const char *llvmGetVersionString(void);
int llvmGetVersionMajor(void);

LLVM_C_EXTERN_C_END

#endif
"""

VERSION_H_NEW = """
#ifndef LLVM_SUPPORT_VERSION_H
#define LLVM_SUPPORT_VERSION_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

#define LLVM_VERSION_FULL 0  /* "toy LLVM <version>git (<build type>, assertions on|off)" */
#define LLVM_VERSION_SHORT 1 /* "<major>.<minor>.<patch>" */
const char *llvmGetVersion(int what);
int llvmGetVersionMajor(void);

LLVM_C_EXTERN_C_END

#endif
"""

APINT_H = """
#ifndef LLVM_ADT_APINT_H
#define LLVM_ADT_APINT_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

#define LLVM_APINT_WORDS 4

/* A fixed-width (256-bit) two's complement integer. */
typedef struct {
  uint64_t words[LLVM_APINT_WORDS];
} LLVMAPInt;

LLVMAPInt llvmAPIntFromI64(int64_t value);
int64_t llvmAPIntToI64(const LLVMAPInt *value);
LLVMAPInt llvmAPIntAdd(const LLVMAPInt *a, const LLVMAPInt *b);
LLVMAPInt llvmAPIntSub(const LLVMAPInt *a, const LLVMAPInt *b);
LLVMAPInt llvmAPIntMul(const LLVMAPInt *a, const LLVMAPInt *b);
LLVMAPInt llvmAPIntShl(const LLVMAPInt *a, unsigned amount);
int llvmAPIntCompare(const LLVMAPInt *a, const LLVMAPInt *b);
unsigned llvmAPIntCountLeadingZeros(const LLVMAPInt *a);

LLVM_C_EXTERN_C_END

#endif
"""

OPCODES_H = """
#ifndef LLVM_IR_OPCODES_H
#define LLVM_IR_OPCODES_H

/* Binary opcodes of the toy IR. */
enum LLVMToyOpcode {
  LLVM_OP_ADD = 1,
  LLVM_OP_SUB,
  LLVM_OP_MUL,
  LLVM_OP_AND,
  LLVM_OP_OR,
  LLVM_OP_XOR,
  LLVM_OP_SHL,
  LLVM_OP_MAX
};

#endif
"""

CONSTANT_FOLD_H_OLD = """
#ifndef LLVM_IR_CONSTANTFOLD_H
#define LLVM_IR_CONSTANTFOLD_H

#include "llvm/IR/Opcodes.h"
#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

/* Folds `lhs <opcode> rhs` on 64-bit integer constants (wrapping on overflow). */
int64_t llvmConstantFold(int opcode, int64_t lhs, int64_t rhs);
/* Whether llvmConstantFold knows the opcode. */
int llvmCanConstantFold(int opcode);

LLVM_C_EXTERN_C_END

#endif
"""

CONSTANT_FOLD_H_NEW = """
#ifndef LLVM_IR_CONSTANTFOLD_H
#define LLVM_IR_CONSTANTFOLD_H

#include "llvm/IR/Opcodes.h"
#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

#define LLVM_FOLD_DEFAULT 0u /* wrap on overflow */
#define LLVM_FOLD_NO_WRAP 1u /* saturate on overflow */

/* Folds `lhs <opcode> rhs` on 64-bit integer constants. */
int64_t llvmConstantFold(int opcode, int64_t lhs, int64_t rhs, unsigned flags);
/* Whether llvmConstantFold knows the opcode. */
int llvmCanConstantFold(int opcode);

LLVM_C_EXTERN_C_END

#endif
"""

INST_SIMPLIFY_H = """
#ifndef LLVM_IR_INSTSIMPLIFY_H
#define LLVM_IR_INSTSIMPLIFY_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

/* Applies simplification pattern `pattern` (0 <= pattern < llvmNumSimplifyPatterns()). */
int64_t llvmSimplify(unsigned pattern, int64_t x, int64_t y);
unsigned llvmNumSimplifyPatterns(void);

LLVM_C_EXTERN_C_END

#endif
"""

TARGET_REGISTRY_H = """
#ifndef LLVM_TARGET_TARGETREGISTRY_H
#define LLVM_TARGET_TARGETREGISTRY_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

typedef struct {
  const char *name;
  unsigned pointerWidth;
  unsigned numInstrs;
  unsigned schedModelVersion;
} LLVMTargetInfo;

/* The targets built into this LLVM (LLVM_TARGETS_TO_BUILD), NULL-terminated by count. */
unsigned llvmGetNumTargets(void);
const LLVMTargetInfo *llvmGetTarget(unsigned index);
const LLVMTargetInfo *llvmLookupTarget(const char *name);

LLVM_C_EXTERN_C_END

#endif
"""

# --------------------------------------------------------------------------- llvm sources

ERROR_HANDLING_C = """
#include "llvm/Support/ErrorHandling.h"

#include <stdio.h>
#include <stdlib.h>

void llvm_unreachable_internal(const char *msg, const char *file, unsigned line) {
  fprintf(stderr, "UNREACHABLE executed at %s:%u: %s\\n", file, line, msg ? msg : "");
  abort();
}
"""

HASHING_C = """
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
"""

STRINGREF_C = """
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
"""

VERSION_C_OLD = """
#include "llvm/Support/Version.h"
#include "llvm/Config/llvm-config.h"

#include <stdio.h>

#define LLVM_STR2(x) #x
#define LLVM_STR(x) LLVM_STR2(x)
#define LLVM_NUMBER                                                                        \\
  LLVM_STR(LLVM_VERSION_MAJOR) "." LLVM_STR(LLVM_VERSION_MINOR) "." LLVM_STR(LLVM_VERSION_PATCH)

const char *llvmGetVersionString(void) {
  return "toy LLVM " LLVM_NUMBER "git (" LLVM_BUILD_TYPE ", assertions "
#if LLVM_ENABLE_ASSERTIONS
         "on"
#else
         "off"
#endif
         ")";
}

int llvmGetVersionMajor(void) { return LLVM_VERSION_MAJOR; }
"""

VERSION_C_NEW = """
#include "llvm/Support/Version.h"
#include "llvm/Config/llvm-config.h"

#include <stdio.h>

#define LLVM_STR2(x) #x
#define LLVM_STR(x) LLVM_STR2(x)
#define LLVM_NUMBER                                                                        \\
  LLVM_STR(LLVM_VERSION_MAJOR) "." LLVM_STR(LLVM_VERSION_MINOR) "." LLVM_STR(LLVM_VERSION_PATCH)

const char *llvmGetVersion(int what) {
  if (what == LLVM_VERSION_SHORT)
    return LLVM_NUMBER;
  return "toy LLVM " LLVM_NUMBER "git (" LLVM_BUILD_TYPE ", assertions "
#if LLVM_ENABLE_ASSERTIONS
         "on"
#else
         "off"
#endif
         ")";
}

int llvmGetVersionMajor(void) { return LLVM_VERSION_MAJOR; }
"""

APINT_C = """
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
  LLVMAPInt nb, one = llvmAPIntFromI64(1);
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
"""

CONSTANT_FOLD_C = """
#include "llvm/IR/ConstantFold.h"
#include "llvm/ADT/APInt.h"
#include "llvm/Support/ErrorHandling.h"

#include <assert.h>

static int64_t foldAdd(int64_t lhs, int64_t rhs) {
  /* Add through the carry chain so that wrap-around is explicit. */
  uint64_t sum = (uint64_t)lhs ^ (uint64_t)rhs;
  uint64_t carry = ((uint64_t)lhs & (uint64_t)rhs) << 1@REGRESSION@;
  while (carry) {
    uint64_t next = sum ^ carry;
    carry = (sum & carry) << 1;
    sum = next;
  }
  return (int64_t)sum;
}

static int64_t foldMul(int64_t lhs, int64_t rhs) {
  LLVMAPInt a = llvmAPIntFromI64(lhs), b = llvmAPIntFromI64(rhs);
  LLVMAPInt p = llvmAPIntMul(&a, &b);
  return llvmAPIntToI64(&p);
}

static int64_t foldSub(int64_t lhs, int64_t rhs) {
  LLVMAPInt a = llvmAPIntFromI64(lhs), b = llvmAPIntFromI64(rhs);
  LLVMAPInt d = llvmAPIntSub(&a, &b);
  return llvmAPIntToI64(&d);
}
@SATURATE@
int llvmCanConstantFold(int opcode) { return opcode >= LLVM_OP_ADD && opcode < LLVM_OP_MAX; }

@SIGNATURE@ {
  assert(llvmCanConstantFold(opcode) && "folding an unknown opcode");
  int64_t result;
  switch (opcode) {
  case LLVM_OP_ADD:
    result = foldAdd(lhs, rhs);
    break;
  case LLVM_OP_SUB:
    result = foldSub(lhs, rhs);
    break;
  case LLVM_OP_MUL:
    result = foldMul(lhs, rhs);
    break;
  case LLVM_OP_AND:
    result = lhs & rhs;
    break;
  case LLVM_OP_OR:
    result = lhs | rhs;
    break;
  case LLVM_OP_XOR:
    result = lhs ^ rhs;
    break;
  case LLVM_OP_SHL:
    result = (int64_t)((uint64_t)lhs << (rhs & 63));
    break;
  default:
    llvm_unreachable("unknown opcode");
  }
@APPLY_FLAGS@  return result;
}
"""

SATURATE_HELPER = """
static int64_t saturate(int opcode, int64_t lhs, int64_t rhs, int64_t wrapped) {
  LLVMAPInt a = llvmAPIntFromI64(lhs), b = llvmAPIntFromI64(rhs), exact;
  if (opcode == LLVM_OP_ADD)
    exact = llvmAPIntAdd(&a, &b);
  else if (opcode == LLVM_OP_SUB)
    exact = llvmAPIntSub(&a, &b);
  else if (opcode == LLVM_OP_MUL)
    exact = llvmAPIntMul(&a, &b);
  else
    return wrapped;
  LLVMAPInt max = llvmAPIntFromI64(INT64_MAX), min = llvmAPIntFromI64(INT64_MIN);
  if (llvmAPIntCompare(&exact, &max) > 0)
    return INT64_MAX;
  if (llvmAPIntCompare(&exact, &min) < 0)
    return INT64_MIN;
  return wrapped;
}

"""

TARGET_REGISTRY_C = """
#include "llvm/Target/TargetRegistry.h"
#include "llvm/Support/StringRef.h"

#define LLVM_TARGET(Name) const LLVMTargetInfo *llvmGet##Name##TargetInfo(void);
#include "llvm/Config/Targets.def"

static const LLVMTargetInfo *(*const kTargets[])(void) = {
#define LLVM_TARGET(Name) llvmGet##Name##TargetInfo,
#include "llvm/Config/Targets.def"
    0};

unsigned llvmGetNumTargets(void) { return (unsigned)(sizeof(kTargets) / sizeof(kTargets[0])) - 1; }

const LLVMTargetInfo *llvmGetTarget(unsigned index) {
  return index < llvmGetNumTargets() ? kTargets[index]() : 0;
}

const LLVMTargetInfo *llvmLookupTarget(const char *name) {
  LLVMStringRef wanted = llvmStringRef(name);
  for (unsigned i = 0; i < llvmGetNumTargets(); ++i) {
    const LLVMTargetInfo *info = kTargets[i]();
    if (llvmStringRefEquals(llvmStringRef(info->name), wanted))
      return info;
  }
  return 0;
}
"""

TARGET_C = """
#include "llvm/Target/TargetRegistry.h"

/* @NAME@ scheduling model, revision @SCHED@. */
#define @NAME@_SCHED_MODEL_VERSION @SCHED@

unsigned llvm@NAME@NumInstrs(void);

const LLVMTargetInfo *llvmGet@NAME@TargetInfo(void) {
  static LLVMTargetInfo info;
  info.name = "@NAME@";
  info.pointerWidth = @WIDTH@;
  info.numInstrs = llvm@NAME@NumInstrs();
  info.schedModelVersion = @NAME@_SCHED_MODEL_VERSION;
  return &info;
}
"""

TOOL_C = """
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
    printf("%s\\n", @VERSION_CALL@);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--targets") == 0) {
    for (unsigned i = 0; i < llvmGetNumTargets(); ++i)
      printf("%s\\n", llvmGetTarget(i)->name);
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "fold") == 0) {
    for (int op = LLVM_OP_ADD; op < LLVM_OP_MAX; ++op) {
      if (strcmp(argv[2], kNames[op]) == 0) {
        long long a = atoll(argv[3]), b = atoll(argv[4]);
        printf("%lld\\n", (long long)@FOLD_CALL@);
        return 0;
      }
    }
  }
  fprintf(stderr, "usage: llvm-toy --version | --targets | fold OP A B\\n");
  return 2;
}
"""

EXTRAS_H_HEAD = """
#ifndef LLVM_SUPPORT_EXTRAS_H
#define LLVM_SUPPORT_EXTRAS_H

#include "llvm/Support/Compiler.h"

LLVM_C_EXTERN_C_BEGIN

int64_t llvmExtraIdentity(int64_t x);
"""

# --------------------------------------------------------------------------- mlir

MLIR_CONTEXT_H = """
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
"""

CREATE_DECL_OLD = "MlirContext mlirContextCreate(void);"
CREATE_DECL_NEW = (
    "/* enableThreading: 0 = single-threaded, 1 = the context may use a thread pool. */\n"
    "MlirContext mlirContextCreateWithThreading(int enableThreading);"
)

MLIR_CONTEXT_C = """
#include "mlir/IR/MLIRContext.h"

#include <assert.h>
#include <stdlib.h>

typedef struct Chunk {
  struct Chunk *next;
  size_t used, capacity;
  unsigned char data[];
} Chunk;

struct MlirContextImpl {
  Chunk *chunks;
  size_t allocations;
  int multithreaded;
};

static MlirContext createContext(int enableThreading) {
  MlirContext ctx = (MlirContext)calloc(1, sizeof(struct MlirContextImpl));
  if (ctx)
    ctx->multithreaded = enableThreading != 0;
  return ctx;
}

@CREATE_DEF@

void mlirContextDestroy(MlirContext ctx) {
  if (!ctx)
    return;
  Chunk *c = ctx->chunks;
  while (c) {
    Chunk *next = c->next;
    free(c);
    c = next;
  }
  free(ctx);
}

int mlirContextIsMultithreaded(MlirContext ctx) { return ctx->multithreaded; }

void *mlirContextAllocate(MlirContext ctx, size_t size) {
  assert(ctx && "null context");
  size = (size + 15) & ~(size_t)15;
  Chunk *c = ctx->chunks;
  if (!c || c->used + size > c->capacity) {
    size_t capacity = size > 4096 ? size : 4096;
    c = (Chunk *)malloc(sizeof(Chunk) + capacity);
    if (!c)
      return NULL;
    c->next = ctx->chunks;
    c->used = 0;
    c->capacity = capacity;
    ctx->chunks = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  ++ctx->allocations;
  return p;
}

size_t mlirContextGetNumAllocations(MlirContext ctx) { return ctx->allocations; }
"""

CREATE_DEF_OLD = "MlirContext mlirContextCreate(void) { return createContext(0); }"
CREATE_DEF_NEW = (
    "MlirContext mlirContextCreateWithThreading(int enableThreading) {\n"
    "  return createContext(enableThreading);\n"
    "}"
)

BUILDERS_H = """
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
"""

BUILDER_DOCS = (
    "/* Creates a binary operation `lhs <opcode> rhs` owned by `ctx`. */",
    "/* Creates a binary operation `lhs <opcode> rhs` owned by `ctx`.\n"
    " * The opcode is one of the LLVM_OP_* values of llvm/IR/Opcodes.h. */",
    "/* Creates a binary operation `lhs <opcode> rhs` owned by `ctx`.\n"
    " * The opcode is one of the LLVM_OP_* values of llvm/IR/Opcodes.h.\n"
    " * Returns NULL when the context is out of memory. */",
)

OPERATION_IMPL_H = """
#ifndef MLIR_LIB_IR_OPERATIONIMPL_H
#define MLIR_LIB_IR_OPERATIONIMPL_H

#include "mlir/IR/Builders.h"

struct MlirOperationImpl {
  MlirContext ctx;
  int opcode;
  int verified;
  int64_t operands[2];
};

#endif
"""

BUILDERS_C = """
#include "OperationImpl.h"

#include <assert.h>

MlirOperation @BUILD@(MlirContext ctx, int opcode, int64_t lhs, int64_t rhs) {
  MlirOperation op = (MlirOperation)mlirContextAllocate(ctx, sizeof(struct MlirOperationImpl));
  if (!op)
    return NULL;
  op->ctx = ctx;
  op->opcode = opcode;
  op->verified = 0;
  op->operands[0] = lhs;
  op->operands[1] = rhs;
  return op;
}

int mlirOperationGetOpcode(MlirOperation op) { return op->opcode; }

int64_t mlirOperationGetOperand(MlirOperation op, unsigned index) {
  assert(index < 2 && "operand index out of range");
  return op->operands[index];
}

int mlirOperationIsVerified(MlirOperation op) { return op->verified; }
"""

PASS_MANAGER_H = """
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
"""

PASS_MANAGER_C = """
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
"""

CANONICALIZE_C = """
#include "../IR/OperationImpl.h"
#include "llvm/IR/Opcodes.h"

int mlirCanonicalize(MlirOperation op); /* used by Pass/PassManager.c */

static int isCommutative(int opcode) {
  switch (opcode) {
  case LLVM_OP_ADD:
  case LLVM_OP_MUL:
  case LLVM_OP_AND:
  case LLVM_OP_OR:
  case LLVM_OP_XOR:
    return 1;
  default:
    return 0;
  }
}

/* Canonical form: the smaller operand of a commutative operation comes first. */
int mlirCanonicalize(MlirOperation op) {
  if (isCommutative(op->opcode) && op->operands[0] > op->operands[1]) {
    int64_t t = op->operands[0];
    op->operands[0] = op->operands[1];
    op->operands[1] = t;
  }
  return 0;
}
"""

README = """
# The toy LLVM Project

A miniature of llvm-project used by tritonbisect's tests: a C library with LLVM's layout,
CMake options and install tree, so that a "Triton" can build against it.

    cmake -G Ninja -S llvm -B build -DCMAKE_INSTALL_PREFIX=$PREFIX \\
      -DLLVM_ENABLE_PROJECTS="mlir;llvm" -DLLVM_TARGETS_TO_BUILD=X86 \\
      -DCMAKE_BUILD_TYPE=Release [-DLLVM_ENABLE_ASSERTIONS=ON]
    ninja -C build install
"""


def _simplify_c() -> str:
    """A generated pattern table (TableGen-like output) that gives the build some weight."""
    out = [
        "/* Generated by toy-tblgen from InstSimplify.td. Do not edit. */",
        '#include "llvm/IR/InstSimplify.h"',
        "",
    ]
    for i in range(SIMPLIFY_PATTERNS):
        a, b, c = (i * 7) % 13 + 1, (i * 11) % 17 + 2, i % 5 + 1
        out.append(
            f"static int64_t pattern{i}(int64_t x, int64_t y) {{\n"
            f"  int64_t t = (x * {a}) ^ (y + {b});\n"
            f"  for (int k = 0; k < {c}; ++k)\n"
            f"    t = (t << {c}) - (t >> {(i % 3) + 1}) + (k ^ y);\n"
            f"  if (t > {i * 97}) t -= x * {b}; else t += y * {a};\n"
            f"  return t ^ (int64_t){i};\n}}\n"
        )
    out.append(f"unsigned llvmNumSimplifyPatterns(void) {{ return {SIMPLIFY_PATTERNS}; }}\n")
    out.append("int64_t llvmSimplify(unsigned pattern, int64_t x, int64_t y) {")
    out.append("  switch (pattern) {")
    for i in range(SIMPLIFY_PATTERNS):
        out.append(f"  case {i}: return pattern{i}(x, y);")
    out.append("  default: return x;")
    out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def _target_instr_info_c(name: str) -> str:
    out = [
        f"/* Generated by toy-tblgen from {name}.td. Do not edit. */",
        "#include <stdint.h>",
        "",
        f"unsigned llvm{name}NumInstrs(void);",
        f"int64_t llvm{name}InstrLatency(unsigned opcode, int64_t operand);",
        "",
    ]
    seed = sum(ord(ch) for ch in name)
    for i in range(TARGET_PATTERNS):
        a = (i * seed) % 23 + 1
        out.append(
            f"static int64_t latency{i}(int64_t v) {{\n"
            f"  int64_t t = v * {a} + {i};\n"
            f"  for (int k = 0; k < {i % 4 + 1}; ++k) t = (t >> 1) ^ (t * {a % 7 + 2});\n"
            f"  return t & 0xff;\n}}\n"
        )
    out.append(f"unsigned llvm{name}NumInstrs(void) {{ return {TARGET_PATTERNS}; }}\n")
    out.append(f"int64_t llvm{name}InstrLatency(unsigned opcode, int64_t operand) {{")
    out.append("  switch (opcode) {")
    for i in range(TARGET_PATTERNS):
        out.append(f"  case {i}: return latency{i}(operand);")
    out.append("  default: return 1;")
    out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def _generated_source(i: int) -> str:
    return _t(
        """
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
        """,
        I=f"{i:04d}",
        K=i,
        N=i % 7 + 2,
    )


def _extras(state: LLVMState) -> tuple[str, str]:
    header = [_t(EXTRAS_H_HEAD)]
    source = [
        '#include "llvm/Support/Extras.h"\n\n',
        "int64_t llvmExtraIdentity(int64_t x) { return x; }\n",
    ]
    for n in state.extras:
        header.append(f"int64_t llvmExtra{n}(int64_t x);\n")
        source.append(f"\nint64_t llvmExtra{n}(int64_t x) {{ return x * {n + 2} + {n}; }}\n")
    header.append("\nLLVM_C_EXTERN_C_END\n\n#endif\n")
    return "".join(header), "".join(source)


def render(state: LLVMState) -> dict[str, str]:
    """The full tree of llvm-project in `state`."""
    fold_flags = _has(state, "fold-flags")
    create_op = _has(state, "create-op")
    run_on_op = _has(state, "run-on-op")
    threading = _has(state, "context-threading")
    version_query = _has(state, "version-query")

    build = "mlirCreateOp" if create_op else "mlirBuildOp"
    run = "mlirPassManagerRunOnOp" if run_on_op else "mlirPassManagerRun"

    files: dict[str, str] = {
        "README.md": _t(README),
        ".gitignore": "/build/\n",
        "llvm/CMakeLists.txt": _t(CMAKE_LLVM, ALL_TARGETS=";".join(ALL_TARGETS)),
        "llvm/include/llvm/Config/llvm-config.h.cmake": _t(LLVM_CONFIG_H),
        "llvm/include/llvm/Config/Targets.def.in": _t(TARGETS_DEF_IN),
        "llvm/include/llvm/Support/Compiler.h": _t(COMPILER_H),
        "llvm/include/llvm/Support/ErrorHandling.h": _t(ERROR_HANDLING_H),
        "llvm/include/llvm/Support/Hashing.h": _t(HASHING_H),
        "llvm/include/llvm/Support/StringRef.h": _t(STRINGREF_H),
        "llvm/include/llvm/Support/Version.h": _t(
            VERSION_H_NEW if version_query else VERSION_H_OLD
        ),
        "llvm/include/llvm/ADT/APInt.h": _t(APINT_H),
        "llvm/include/llvm/IR/Opcodes.h": _t(OPCODES_H),
        "llvm/include/llvm/IR/ConstantFold.h": _t(
            CONSTANT_FOLD_H_NEW if fold_flags else CONSTANT_FOLD_H_OLD
        ),
        "llvm/include/llvm/IR/InstSimplify.h": _t(INST_SIMPLIFY_H),
        "llvm/include/llvm/Target/TargetRegistry.h": _t(TARGET_REGISTRY_H),
        "llvm/lib/Support/ErrorHandling.c": _t(ERROR_HANDLING_C),
        "llvm/lib/Support/Hashing.c": _t(HASHING_C, BROKEN="" if state.broken else ";"),
        "llvm/lib/Support/StringRef.c": _t(STRINGREF_C),
        "llvm/lib/Support/Version.c": _t(VERSION_C_NEW if version_query else VERSION_C_OLD),
        "llvm/lib/ADT/APInt.c": _t(APINT_C),
        "llvm/lib/IR/ConstantFold.c": _t(
            CONSTANT_FOLD_C,
            REGRESSION=" | 1" if state.regression else "",
            SATURATE=SATURATE_HELPER if fold_flags else "\n",
            SIGNATURE=(
                "int64_t llvmConstantFold(int opcode, int64_t lhs, int64_t rhs, unsigned flags)"
                if fold_flags
                else "int64_t llvmConstantFold(int opcode, int64_t lhs, int64_t rhs)"
            ),
            APPLY_FLAGS=(
                "  if (flags & LLVM_FOLD_NO_WRAP)\n"
                "    result = saturate(opcode, lhs, rhs, result);\n"
                if fold_flags
                else ""
            ),
        ),
        "llvm/lib/IR/InstSimplify.c": _simplify_c(),
        "llvm/lib/Target/TargetRegistry.c": _t(TARGET_REGISTRY_C),
        "llvm/tools/llvm-toy/llvm-toy.c": _t(
            TOOL_C,
            VERSION_CALL=(
                "llvmGetVersion(LLVM_VERSION_FULL)" if version_query else "llvmGetVersionString()"
            ),
            FOLD_CALL=(
                "llvmConstantFold(op, a, b, LLVM_FOLD_DEFAULT)"
                if fold_flags
                else "llvmConstantFold(op, a, b)"
            ),
        ),
        "llvm/docs/ReleaseNotes.md": "# Toy LLVM release notes\n\n"
        + "".join(f"* {note}\n" for note in state.notes),
        "mlir/CMakeLists.txt": _t(CMAKE_MLIR),
        "mlir/docs/Dialects.md": "# MLIR dialects (toy)\n\n"
        + "".join(f"* {note}\n" for note in state.mlir_notes),
        "mlir/include/mlir/IR/MLIRContext.h": _t(
            MLIR_CONTEXT_H, CREATE_DECL=CREATE_DECL_NEW if threading else CREATE_DECL_OLD
        ),
        "mlir/include/mlir/IR/Builders.h": _t(
            BUILDERS_H, BUILD=build, DOC=BUILDER_DOCS[state.builder_doc % len(BUILDER_DOCS)]
        ),
        "mlir/include/mlir/Pass/PassManager.h": _t(PASS_MANAGER_H, RUN=run),
        "mlir/lib/IR/MLIRContext.c": _t(
            MLIR_CONTEXT_C, CREATE_DEF=CREATE_DEF_NEW if threading else CREATE_DEF_OLD
        ),
        "mlir/lib/IR/OperationImpl.h": _t(OPERATION_IMPL_H),
        "mlir/lib/IR/Builders.c": _t(BUILDERS_C, BUILD=build),
        "mlir/lib/Pass/PassManager.c": _t(PASS_MANAGER_C, RUN=run),
        "mlir/lib/Transforms/Canonicalize.c": _t(CANONICALIZE_C),
    }
    header, source = _extras(state)
    files["llvm/include/llvm/Support/Extras.h"] = header
    files["llvm/lib/Support/Extras.c"] = source
    sched = dict(state.sched)
    widths = {"X86": 64, "AArch64": 64, "NVPTX": 64, "AMDGPU": 64}
    for name in ALL_TARGETS:
        files[f"llvm/lib/Target/{name}/{name}Target.c"] = _t(
            TARGET_C, NAME=name, SCHED=sched[name], WIDTH=widths[name]
        )
        files[f"llvm/lib/Target/{name}/{name}GenInstrInfo.c"] = _target_instr_info_c(name)
    for n in state.tests:
        files[f"llvm/test/CodeGen/X86/extra-{n}.ll"] = _t(
            """
            ; RUN: llc -mtriple=x86_64 < %s | FileCheck %s
            define i64 @f@N@(i64 %x) {
              %r = add i64 %x, @N@
              ret i64 %r
            }
            ; CHECK: addq $@N@
            """,
            N=n,
        )
    for i in range(state.extra_sources):
        files[f"llvm/lib/Generated/Gen{i:04d}.c"] = _generated_source(i)
    return files


@dataclass
class _FillerCycle:
    """Deterministic filler commits: docs, unrelated helpers, tests, target tweaks."""

    counter: int = 0
    kinds: tuple[str, ...] = field(
        default=("extra", "docs", "target", "test", "mlir-docs", "extra", "builder-doc", "docs")
    )

    def next(self, state: LLVMState) -> tuple[LLVMState, str, str]:
        n = self.counter
        self.counter += 1
        kind = self.kinds[n % len(self.kinds)]
        if kind == "extra":
            return (
                state.with_(extras=(*state.extras, n)),
                f"[Support] Add llvmExtra{n} helper",
                "Used by an upcoming pass; no functional change for existing users.",
            )
        if kind == "docs":
            note = f"Note {n}: the toy optimizer is {n} percent less surprising."
            return state.with_(notes=(*state.notes, note)), f"[docs] Release notes update ({n})", ""
        if kind == "target":
            target = ALL_TARGETS[(n // len(self.kinds)) % len(ALL_TARGETS)]
            sched = tuple((t, v + 1 if t == target else v) for t, v in state.sched)
            return (
                state.with_(sched=sched),
                f"[{target}] Update the scheduling model",
                "Latencies from the latest optimization guide.",
            )
        if kind == "test":
            return (
                state.with_(tests=(*state.tests, n)),
                f"[X86][test] Add a codegen test for add ({n})",
                "",
            )
        if kind == "mlir-docs":
            note = f"Dialect note {n}."
            return (
                state.with_(mlir_notes=(*state.mlir_notes, note)),
                f"[mlir][docs] Document dialect conversion ({n})",
                "",
            )
        # builder-doc: touches a header Triton includes without changing the API
        return (
            state.with_(builder_doc=state.builder_doc + 1),
            "[mlir][NFC] Clarify the documentation of the operation builder",
            "",
        )
