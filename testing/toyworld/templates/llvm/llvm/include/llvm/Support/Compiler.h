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
