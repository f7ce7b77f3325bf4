#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "triton.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Version.h"

static const struct {
  const char *name;
  int opcode;
} kOps[] = {
    {"add", LLVM_OP_ADD}, {"sub", LLVM_OP_SUB}, {"mul", LLVM_OP_MUL}, {"and", LLVM_OP_AND},
    {"or", LLVM_OP_OR},   {"xor", LLVM_OP_XOR}, {"shl", LLVM_OP_SHL},
};

static int opcodeFromName(const char *name) {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i)
    if (strcmp(kOps[i].name, name) == 0)
      return kOps[i].opcode;
  return -1;
}

static int readInts(PyObject *fast, Py_ssize_t n, int64_t *out) {
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (v == -1 && PyErr_Occurred())
      return -1;
    out[i] = (int64_t)v;
  }
  return 0;
}

static PyObject *run_elementwise(PyObject *self, PyObject *args) {
  const char *name;
  PyObject *xs, *ys, *xf = NULL, *yf = NULL, *result = NULL;
  int64_t *buffer = NULL;
  (void)self;
  if (!PyArg_ParseTuple(args, "sOO:run_elementwise", &name, &xs, &ys))
    return NULL;
  int opcode = opcodeFromName(name);
  if (opcode < 0)
    return PyErr_Format(PyExc_ValueError, "unknown elementwise op '%s'", name);
  xf = PySequence_Fast(xs, "x must be a sequence of ints");
  yf = xf ? PySequence_Fast(ys, "y must be a sequence of ints") : NULL;
  if (!yf)
    goto done;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(xf);
  if (PySequence_Fast_GET_SIZE(yf) != n) {
    PyErr_SetString(PyExc_ValueError, "x and y differ in length");
    goto done;
  }
  buffer = (int64_t *)PyMem_Calloc(3 * (size_t)(n ? n : 1), sizeof(int64_t));
  if (!buffer) {
    PyErr_NoMemory();
    goto done;
  }
  int64_t *x = buffer, *y = buffer + n, *out = buffer + 2 * n;
  if (readInts(xf, n, x) != 0 || readInts(yf, n, y) != 0)
    goto done;

  TritonKernel kernel;
  if (triton_kernel_init(&kernel, opcode) != 0) {
    PyErr_SetString(PyExc_RuntimeError, "cannot create an MLIR context");
    goto done;
  }
  int status = 0;
@LOOP@
  triton_kernel_destroy(&kernel);
  if (status != 0) {
    PyErr_Format(PyExc_RuntimeError, "the '%s' kernel failed to compile", name);
    goto done;
  }
  result = PyList_New(n);
  for (Py_ssize_t i = 0; result && i < n; ++i)
    PyList_SET_ITEM(result, i, PyLong_FromLongLong((long long)out[i]));

done:
  PyMem_Free(buffer);
  Py_XDECREF(xf);
  Py_XDECREF(yf);
  return result;
}

static PyObject *llvm_version(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(llvmGetVersionString());
}

static PyObject *build_info(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
#ifdef NDEBUG
  int assertions = 0;
#else
  int assertions = 1;
#endif
#ifdef TRITON_DEBUG
  int debug = 1;
#else
  int debug = 0;
#endif
  return Py_BuildValue("{s:O,s:O,s:s,s:i}", "assertions", assertions ? Py_True : Py_False,
                       "debug", debug ? Py_True : Py_False, "llvm_targets",
                       LLVM_TARGETS_TO_BUILD, "llvm_assertions", LLVM_ENABLE_ASSERTIONS);
}

static PyObject *next_power_of_2(PyObject *self, PyObject *arg) {
  (void)self;
  long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred())
    return NULL;
  return PyLong_FromLongLong((long long)triton_next_power_of_2((int64_t)n));
}

static PyMethodDef kMethods[] = {
    {"run_elementwise", run_elementwise, METH_VARARGS,
     "run_elementwise(op, x, y) -> list: compile and run an elementwise kernel"},
    {"llvm_version", llvm_version, METH_NOARGS, "the version of the LLVM Triton was built with"},
    {"build_info", build_info, METH_NOARGS, "how this extension was built"},
    {"next_power_of_2", next_power_of_2, METH_O, "the smallest power of 2 >= n"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "libtriton", "Toy Triton's compiler core.", -1, kMethods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_libtriton(void) { return PyModule_Create(&kModule); }
