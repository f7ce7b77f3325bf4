# ruff: noqa: UP031  (runs on the traced program's Python, which may be older than the tool's)
"""Where the tracer's records go: one NDJSON file per process, and `tracer_errors.log`.

File names follow tritonparse's: `dedicated_log_triton_trace_<user>_rank_<N|none>_pid_<PID>_
host_<HOST>_.ndjson`, so every process (a fork or spawn child, an Inductor compile worker, an
autotune subprocess) writes its own file, and a new one when torch.distributed gives it a rank.
Each record is one `os.write` on a file opened with O_APPEND: nothing is buffered in Python,
so nothing is lost or written twice when the program forks or ends with `os._exit`.

Failures are never raised into the program: `fail()` counts them and appends a JSON line to
`tracer_errors.log` (the first few of each kind in full, then at every power of two, and the
final count at exit), which `tritonbisect trace` summarises.
"""

import atexit
import contextlib
import getpass
import json
import math
import os
import re
import socket
import sys
import threading
import time
import traceback

from . import config

# Kept across importlib.reload (the module dict survives a reload): a reload must not open a
# second file or forget what was counted.
_state = globals().get("_state") or {
    "fd": None,  # trace file descriptor of this process
    "fd_key": None,  # (pid, rank) it was opened for
    "err_fd": None,
    "err_pid": None,
    "errors": {},  # (stage, kernel, exception type) -> [count, last count written, first message]
    "atexit": False,
    "fork_handler": False,
    "stderr_warned": False,
}
_lock = globals().get("_lock") or threading.RLock()

LOG_EVERY_UNTIL = 10  # each of the first 10 failures of a kind gets its line; then powers of two


# --- names ------------------------------------------------------------------------------


def _clean(text):
    return re.sub(r"[^A-Za-z0-9-]", "-", text) or "unknown"


def user():
    try:
        return _clean(getpass.getuser())
    except Exception:
        return "unknown"


def host():
    try:
        return _clean(socket.gethostname().split(".")[0])
    except Exception:
        return "unknown"


def rank():
    torch = sys.modules.get("torch")
    try:
        dist = getattr(torch, "distributed", None) if torch is not None else None
        if dist is not None and dist.is_available() and dist.is_initialized():
            return str(dist.get_rank())
    except Exception:
        pass
    return "none"


def trace_file_name(pid, rank_token):
    return "dedicated_log_triton_trace_%s_rank_%s_pid_%d_host_%s_.ndjson" % (user(), rank_token, pid, host())


# --- JSON -------------------------------------------------------------------------------


def convert(obj):
    """JSON-able form of metadata (tritonparse's conventions: non-finite floats as strings)."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if isinstance(obj, (list, tuple)):
        if hasattr(obj, "_asdict"):
            return convert(obj._asdict())
        return [convert(x) for x in obj]
    if isinstance(obj, (set, frozenset)):
        return [convert(x) for x in sorted(obj, key=str)]
    if isinstance(obj, dict):
        return {str(k): convert(v) for k, v in obj.items()}
    if hasattr(obj, "__dataclass_fields__"):
        return {k: convert(getattr(obj, k)) for k in obj.__dataclass_fields__}
    if hasattr(obj, "_asdict"):
        return convert(obj._asdict())
    return str(obj)


def _timestamp():
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%06dZ" % int(now % 1 * 1e6)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# --- trace records ----------------------------------------------------------------------


def _trace_fd():
    key = (os.getpid(), rank())
    if _state["fd"] is None or _state["fd_key"] != key:
        directory = config.out_dir()
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, trace_file_name(key[0], key[1]))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if _state["fd"] is not None and _state["fd_key"][0] == key[0]:
            _close_quietly(_state["fd"])  # a rank change in this process: the old file is done
        _state["fd"], _state["fd_key"] = fd, key
    return _state["fd"]


def write(event):
    """Append one record to this process's trace file. Raises on failure: callers count it."""
    event.setdefault("pid", os.getpid())
    event.setdefault("timestamp", _timestamp())
    line = (json.dumps(convert(event), separators=(",", ":")) + "\n").encode("utf-8")
    with _lock:
        _write_all(_trace_fd(), line)


# --- failures ---------------------------------------------------------------------------

# What a failure at each stage costs the trace (used in tracer_errors.log and by `trace`).
LOST = {
    "install": "processes not traced at all (the tracer could not be installed)",
    "compilation": "compilation records",
    "launch": "launch records",
    "launch_exit": "records of the outputs after a launch",
    "blob": "tensor blobs (their statistics were kept)",
    "hooks": "launch records (the program replaced Triton's launch hook)",
    "interpreter": "launch records",
}


def _error_kind(exc):
    return type(exc).__name__ if isinstance(exc, BaseException) else "note"


def _error_text(exc):
    text = "%s: %s" % (type(exc).__name__, exc) if isinstance(exc, BaseException) else str(exc)
    return text if len(text) <= 300 else text[:297] + "..."


def fail(stage, exc, kernel=None):
    """Count one failure of the tracer; log it. Never raises.

    Failures are counted per (stage, kernel, exception type): the same error on other
    tensors or launches is the same kind of loss, even when its message names another path.
    """
    try:
        key = (stage, str(kernel) if kernel is not None else None, _error_kind(exc))
        with _lock:
            entry = _state["errors"].setdefault(key, [0, 0, _error_text(exc)])
            entry[0] += 1
            count = entry[0]
            if count <= LOG_EVERY_UNTIL or count & (count - 1) == 0:
                detail = None
                if count == 1 and isinstance(exc, BaseException) and exc.__traceback__ is not None:
                    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
                _log_error(key, count, _error_text(exc), detail)
                entry[1] = count
        _ensure_atexit()
    except Exception as inner:  # the log itself cannot be written: say so once, on stderr
        _last_resort(inner)


def _log_error(key, count, error, detail):
    stage, kernel, kind = key
    record = {"time": _timestamp(), "pid": os.getpid(), "host": host(), "stage": stage, "kernel": kernel,
              "lost": LOST.get(stage, "records"), "kind": kind, "error": error, "count": count}
    if detail:
        record["traceback"] = detail
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
    pid = os.getpid()
    if _state["err_fd"] is None or _state["err_pid"] != pid:
        directory = config.out_dir()
        os.makedirs(directory, exist_ok=True)
        _state["err_fd"] = os.open(os.path.join(directory, config.ERRORS_LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                                   0o644)
        _state["err_pid"] = pid
    _write_all(_state["err_fd"], line)


def _last_resort(exc):
    if _state["stderr_warned"]:
        return
    _state["stderr_warned"] = True
    with contextlib.suppress(Exception):
        sys.stderr.write("tritonbisect trace: cannot write %s: %r\n" % (config.ERRORS_LOG, exc))


def flush_error_counts():
    """At exit: write the final count of every failure kind whose last line is out of date."""
    try:
        with _lock:
            for key, entry in _state["errors"].items():
                if entry[0] != entry[1]:
                    _log_error(key, entry[0], entry[2], None)
                    entry[1] = entry[0]
    except Exception as exc:
        _last_resort(exc)


def _ensure_atexit():
    if not _state["atexit"]:
        _state["atexit"] = True
        atexit.register(flush_error_counts)


# --- processes --------------------------------------------------------------------------


def _close_quietly(fd):
    with contextlib.suppress(OSError):
        os.close(fd)


def after_fork_in_child():
    """A forked child starts its own file, its own error counts and a fresh lock."""
    global _lock
    _lock = threading.RLock()
    for name in ("fd", "err_fd"):
        if _state[name] is not None:
            _close_quietly(_state[name])
    _state.update(fd=None, fd_key=None, err_fd=None, err_pid=None, errors={})
