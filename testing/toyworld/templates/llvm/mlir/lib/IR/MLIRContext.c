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
