# ruff: noqa: UP031, B905  (runs on the target's Python, which may be older than the tool's)
"""What every runtime and replay oracle script shares: exit codes and statuses, the result
file, the watchdog, the device, and how an exception is read (a compile error, out of
resources, a load failure). Copied beside the script; standard library only."""

import json
import os
import sys
import threading
import time
import traceback

EXIT_PASS = 0
EXIT_MISMATCH = 1
EXIT_USAGE = 2
EXIT_COMPILE_ERROR = 3
EXIT_RUNTIME_ERROR = 4
EXIT_UNREADABLE_IR = 5
EXIT_OUT_OF_RESOURCES = 6
EXIT_TIMEOUT = 124
EXIT_ENV_UNUSABLE = 125
EXIT_OF_STATUS = {
    "pass": EXIT_PASS,
    "mismatch": EXIT_MISMATCH,
    "usage_error": EXIT_USAGE,
    "compile_error": EXIT_COMPILE_ERROR,
    "runtime_error": EXIT_RUNTIME_ERROR,
    "unreadable_ir": EXIT_UNREADABLE_IR,
    "out_of_resources": EXIT_OUT_OF_RESOURCES,
    "timeout": EXIT_TIMEOUT,
    "env_unusable": EXIT_ENV_UNUSABLE,
}

PAD = 1024  # guard bytes before and after every storage (out-of-bounds write detection)
GUARD_BYTE = 0x7F

# rtol, atol per dtype: integers and bools are compared exactly.
TOLERANCES = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float8_e4m3fn": (0.125, 1e-3),
    "float8_e4m3fnuz": (0.125, 1e-3),
    "float8_e5m2": (0.25, 1e-3),
    "float8_e5m2fnuz": (0.25, 1e-3),
    "float8_e8m0fnu": (0.5, 0.0),
    "complex64": (1e-5, 1e-6),
    "complex128": (1e-7, 1e-9),
}
# exception types that mean "the kernel did not compile"
COMPILE_ERROR_TYPES = {
    "CompilationError",
    "CompileTimeAssertionFailure",
    "UnsupportedLanguageConstruct",
    "MLIRCompilationError",
    "SyntaxError",
    "NameError",
    "TypeError",
    "AttributeError",
    "ValueError",
    "NotImplementedError",
}


class Outcome(Exception):
    """Ends the run with a status (see EXIT_OF_STATUS)."""

    def __init__(self, status, reason, **extra):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.extra = extra


# --- result file ------------------------------------------------------------------------


class Result:
    def __init__(self, paths, kernel=None):
        self.paths = [p for p in paths if p]
        self.data: dict = {
            "status": "running",
            "kernel": kernel,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.finished = False

    def write(self):
        text = json.dumps(self.data, indent=1, sort_keys=True, default=str)
        for path in self.paths:
            try:
                directory = os.path.dirname(os.path.abspath(path))
                os.makedirs(directory, exist_ok=True)
                tmp = path + ".tmp%d" % os.getpid()
                with open(tmp, "w", encoding="utf-8") as fh:
                    fh.write(text)
                os.replace(tmp, path)
            except OSError as exc:
                print("repro: cannot write result %s: %s" % (path, exc), file=sys.stderr)

    def finish(self, status, reason, **extra):
        with self.lock:
            if self.finished:
                return EXIT_OF_STATUS.get(status, EXIT_USAGE)
            self.finished = True
            self.data.update(extra)
            self.data["status"] = status
            self.data["reason"] = reason
            self.data["seconds"] = round(time.time() - self.t0, 3)
            self.write()
        print("%s: %s" % (status.upper(), reason), flush=True)
        return EXIT_OF_STATUS.get(status, EXIT_USAGE)

def start_watchdog(result, seconds):
    if not seconds or seconds <= 0:
        return

    def fire():
        result.finish("timeout", "no result after %gs: the kernel hangs or is far too slow" % seconds)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_TIMEOUT)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()


# --- device -----------------------------------------------------------------------------


def choose_device(torch, wanted):
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0") and wanted in (None, "auto"):
        return "cpu"
    if wanted and wanted != "auto":
        return wanted
    if torch.cuda.is_available():
        return "cuda"
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return "xpu"
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"

def synchronize(torch, device):
    kind = device.split(":")[0]
    if kind == "cuda":
        torch.cuda.synchronize()
    elif kind == "xpu":
        torch.xpu.synchronize()
    elif kind == "mps":
        torch.mps.synchronize()


# --- errors -----------------------------------------------------------------------------


def error_kind(exc):
    """compile_error, out_of_resources or runtime_error, from the exception (and what it wraps)."""
    seen = 0
    while exc is not None and seen < 6:
        if type(exc).__name__ == "OutOfResources":  # compiled; the device refuses to launch it
            return "out_of_resources"
        if type(exc).__name__ in COMPILE_ERROR_TYPES:
            return "compile_error"
        text = str(exc)
        if "PassManager" in text or "failed to legalize" in text or "CompilationError" in text:
            return "compile_error"
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return "runtime_error"

def load_failure(exc):
    """(status, reason) of a kernel source that does not load: a module it imports that this
    environment lacks (not triton's own, which is the Triton under test) is the set-up's fault,
    with the fix; anything else is the Triton at hand lacking what the kernel uses."""
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    if missing and missing.split(".")[0] != "triton":
        return "env_unusable", ("the kernel source imports %s, which the Python the oracle runs with (%s) lacks: "
                                "install it there (e.g. `%s -m pip install %s`), then run again"
                                % (missing, sys.executable, sys.executable, missing.split(".")[0]))
    return "compile_error", "the embedded kernel source does not load: " + short_error(exc)

def short_error(exc):
    lines = [line for line in traceback.format_exception_only(type(exc), exc) if line.strip()]
    text = " ".join(line.strip() for line in lines)
    return text[:400]
