"""The tracer that `tritonbisect trace` injects into the traced program.

`trace_cmd.write_bootstrap` copies this package, as `_tritonbisect_tracer`, into a bootstrap
folder put first on the program's PYTHONPATH, beside a generated `sitecustomize.py` that calls
`install.install()`. So it runs in the *program's* Python, in every child Python of it too
(fork, spawn, Inductor's compile workers and autotune subprocesses), and must never import
tritonbisect or tritonparse. At import time it needs the standard library only; torch and
triton only once the program has imported them.

The first rule: tracing changes nothing in the traced program.
- Nothing is attached to the program's objects. Launch context is taken by wrapping the
  `launch_metadata` method of Triton's `CompiledKernel` *class* (and, under TRITON_INTERPRET=1,
  the interpreter's `GridExecutor.__call__`), so a `JITFunction`, a compiled kernel or its
  metadata pickles exactly as it would untraced (Inductor moves kernels between processes
  by pickling them).
- Everything installed in Triton's knobs is a module-level function or a `functools.partial`
  of one: picklable by reference, and the same object after `importlib.reload`.
- Every failure inside the tracer is caught, counted and written to `tracer_errors.log` in
  the trace folder (`sink.fail`); nothing is printed into the program's output.

Modules: `config` (environment), `sink` (per-process NDJSON files, the error log),
`records` (argument records: tensors, TensorDescriptors, tuples, scalars; blobs),
`hooks` (compilation listener, launch hooks), `interp` (the interpreter), `notes` (what each
process knew at its end: Inductor's static launcher, its caches, CUDA graphs), `install`.
This `__init__` imports nothing, so the tool can read `config` without side effects.
"""
