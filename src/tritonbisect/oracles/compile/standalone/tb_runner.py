# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Compile one job in a child process and classify how it ended. No GPU needed.

    from tb_runner import compile_in_child
    res = compile_in_child(job, work_dir, timeout=600)
    res.status   # pass | compile_error | crash | unreadable_ir | timeout | env_unusable | usage_error
    res.reason   # one line
    res.artifacts, res.metadata, res.triton_version ...

`job` says what to compile and for which target (see tb_bridge for the parameter format):

    {"what": {"kind": "python", "file": "kernel.py", "kernel": "add_kernel", "params": [...]}
          or {"kind": "ir", "file": "kernel.ttgir"},
     "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
     "options": {"num_warps": 4, "num_stages": 3, ...}}

The child (tb_child.py, run with `python` of the environment under test) records its phase
before each step, so the way it ended says whose fault it is:

    ended                                   phase          status
    compiled                                -              pass
    exception, signal or death              parse          unreadable_ir  (this Triton cannot read the IR: dialect drift)
    Python exception                        compile        compile_error  (frontend, MLIR pass, ptxas error)
    Python exception                        load           compile_error  (the kernel's module does not load)
    a module it imports is missing          load           env_unusable   (not triton's: the set-up, with the fix)
    killed by a signal, or died silently    compile        crash          (abort(), assertion, segfault, LLVM fatal error)
    exception or death                      import         env_unusable   (this Triton does not import)
    a tool the compiler runs is missing     compile        usage_error    (the machine, not the commit)
    exception                               bridge/collect usage_error    (our harness: never a false compile_error)
    this Triton cannot express the kernel   bridge         env_unusable   (tuples before 3.3, descriptors before 3.4: skip)
    no result before the deadline           any            timeout

Standard library only; copied verbatim into compile-oracle folders and importable from the
tool (tritonbisect.oracles.compile.standalone.tb_runner).
"""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tb_child.py")
TAIL = 4000

# A tool the compiler runs is missing on this machine: not the commit's fault.
_MISSING_TOOL = re.compile(
    r"(?:ld\.lld|lld|ptxas|nvdisasm|cuobjdump|linker|assembler)[^\n]{0,80}(?:not found|No such file)"
    r"|No such file or directory: '[^']*(?:ptxas|ld\.lld|rocm)[^']*'",
    re.IGNORECASE,
)
# Lines that name a native crash best, first match wins.
_CRASH_LINES = re.compile(
    r"Assertion [`'\"].*failed|LLVM ERROR.*|terminate called.*|Fatal Python error.*|"
    r"Segmentation fault.*|Aborted.*|UNREACHABLE executed.*|error: .*"
)


class CompileResult:
    def __init__(self, status, reason, **extra):
        self.status = status
        self.reason = reason
        self.phase = extra.pop("phase", None)
        self.returncode = extra.pop("returncode", None)
        self.signal = extra.pop("signal", None)
        self.seconds = extra.pop("seconds", None)
        self.stderr_tail = extra.pop("stderr_tail", "")
        self.child = extra.pop("child", {}) or {}
        self.work_dir = extra.pop("work_dir", None)
        self.extra = extra

    @property
    def ok(self):
        return self.status == "pass"

    def cleanup(self):
        """Remove the work folder compile_in_child made itself (artifacts included)."""
        if self.work_dir and self.extra.pop("_own_work", False):
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None

    @property
    def artifacts(self):
        return dict(self.child.get("artifacts") or {})

    @property
    def metadata(self):
        return dict(self.child.get("metadata") or {})

    @property
    def triton_version(self):
        return self.child.get("triton_version")

    @property
    def triton_dir(self):
        return self.child.get("triton_dir")

    def to_dict(self):
        out = {
            "status": self.status,
            "reason": self.reason,
            "phase": self.phase,
            "returncode": self.returncode,
            "signal": self.signal,
            "seconds": self.seconds,
            "triton_version": self.triton_version,
            "api_flavor": self.child.get("api_flavor"),
            "dropped_options": self.child.get("dropped_options") or [],
            "child_seconds": self.child.get("seconds"),
        }
        if self.status != "pass":
            out["stderr_tail"] = self.stderr_tail[-TAIL:]
            if self.child.get("error_type"):
                out["error"] = {"type": self.child.get("error_type"), "module": self.child.get("error_module"),
                                "message": (self.child.get("message") or "")[:4000]}
        out.update({k: v for k, v in self.extra.items() if not k.startswith("_")})
        return out


def signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


def child_env(base=None, cache_dir=None):
    """The child's environment: a private TRITON_CACHE_DIR (a cache hit would skip the very
    compile under test) and no TRITON_INTERPRET (it turns @triton.jit into the interpreter)."""
    env = dict(os.environ if base is None else base)
    env.pop("TRITON_INTERPRET", None)
    if cache_dir is not None:
        env["TRITON_CACHE_DIR"] = cache_dir
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _crash_line(text):
    found = None
    for m in _CRASH_LINES.finditer(text or ""):
        found = found or m.group(0).strip()
        if not m.group(0).startswith("error:"):
            return m.group(0).strip()[:300]
    if found:
        return found[:300]
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _error_text(child):
    """The most telling line of a compile exception: its first line, and MLIR's `error:` or
    ptxas's `fatal` line when the message has one."""
    message = child.get("message") or ""
    kind = child.get("error_type", "Exception")
    first = _first_line(message)
    if re.match(r"^at \d+:\d+:?$", first):  # a frontend error: source excerpt, caret, then the cause
        lines = [line.strip() for line in message.splitlines() if line.strip()]
        first = "%s (kernel source line %s)" % (lines[-1][:300], first[3:].rstrip(":"))
    text = "%s: %s" % (kind, first) if first else kind
    for line in message.splitlines()[1:]:
        low = line.lower()
        if ("error:" in low or "fatal" in low) and line.strip() != first:
            return ("%s (%s)" % (text, line.strip()))[:400]
    return text[:400]


def _parse_error(child, stderr):
    """MLIR's own diagnostic (`loc(...): error: ...`) of a failed parse, else the exception."""
    for line in (stderr or "").splitlines():
        if "error:" in line:
            return line.strip()[:300]
    return _error_text(child)


def classify(child, returncode, phase, stderr, timed_out, timeout):
    """(status, reason) from what the child left behind."""
    sig = -returncode if returncode is not None and returncode < 0 else None
    if timed_out:
        return "timeout", "no result after %gs in phase '%s': the compiler hangs or is far too slow" % (timeout, phase)
    if child is not None and child.get("ok"):
        return "pass", "compiled with triton %s" % child.get("triton_version", "?")
    if child is not None:  # a Python exception, with the phase it happened in
        where = child.get("phase") or phase
        text = _error_text(child)
        if where == "import":
            return "env_unusable", "triton fails to import: %s" % text
        if child.get("unsupported"):
            return "env_unusable", "this Triton cannot compile the kernel as traced: %s" % (child.get("message") or "")[:300]
        if child.get("harness_error") or where in ("start", "bridge", "collect"):
            return "usage_error", "the compile oracle could not drive this Triton (%s phase): %s" % (where, text)
        if where == "parse":  # an IR job: this Triton's dialects cannot read the file
            return "unreadable_ir", "this Triton cannot read the IR: %s" % _parse_error(child, stderr)
        if where == "load":  # executing the kernel's module: the Triton at hand lacks what it uses
            missing = child.get("missing_module")
            if missing and missing.split(".")[0] != "triton":  # not the Triton under test: the set-up
                return "env_unusable", missing_module_reason(missing, child.get("python") or "python")
            return "compile_error", "the kernel source does not load with this Triton: %s" % text
        if _MISSING_TOOL.search(child.get("message") or ""):
            return "usage_error", "the compiler needs a tool this machine lacks: %s" % text
        if "(" not in text:  # MLIR prints its diagnostic to stderr, not into the exception
            diag = [line.strip() for line in (stderr or "").splitlines() if "error:" in line]
            if diag:
                text = "%s (%s)" % (text, diag[0][:240])
        return "compile_error", "the kernel does not compile: %s" % text
    # no result: the process died under us
    died = ("killed by %s" % signal_name(sig)) if sig else ("exited %s without a result" % returncode)
    line = _crash_line(stderr)
    detail = (": %s" % line) if line else ""
    if phase in ("start", "import"):
        return "env_unusable", "triton fails to import (%s)%s" % (died, detail)
    if phase == "parse":
        return "unreadable_ir", "this Triton cannot read the IR: the parser died (%s)%s" % (died, detail)
    if phase in ("load", "compile"):
        return "crash", "the compiler crashed (%s)%s" % (died, detail)
    return "usage_error", "the compile oracle's child %s in phase '%s'%s" % (died, phase, detail)


def missing_module_reason(name, python):
    """The fix for a kernel source that imports a module the target environment lacks."""
    top = name.split(".")[0]
    return ("the kernel source imports %s, which the Python the oracle runs with (%s) lacks: "
            "install it there (e.g. `%s -m pip install %s`), then run again" % (name, python, python, top))


def compile_in_child(job, work_dir=None, timeout=600.0, python=None, env=None, keep=False, cwd=None):
    """Compile `job` in a child process of `python` (default: this interpreter); classify.

    The artifacts land in `work_dir` (default: a temporary folder, removed at once on failure
    unless `keep`, else by `result.cleanup()` once the caller has read them)."""
    own = work_dir is None
    work = tempfile.mkdtemp(prefix="tb-compile-") if own else os.path.abspath(work_dir)
    os.makedirs(work, exist_ok=True)
    out_dir = os.path.join(work, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    cache = os.path.join(work, "triton-cache")
    shutil.rmtree(cache, ignore_errors=True)
    job_path = os.path.join(work, "job.json")
    with open(job_path, "w", encoding="utf-8") as fh:
        json.dump(job, fh, indent=1)
    stdout_path = os.path.join(work, "child.stdout")
    stderr_path = os.path.join(work, "child.stderr")
    t0 = time.time()
    timed_out = False
    with open(stdout_path, "w") as out, open(stderr_path, "w") as err:
        proc = subprocess.Popen([python or sys.executable, CHILD, job_path, out_dir], stdout=out, stderr=err,
                                env=child_env(env, cache), start_new_session=True, cwd=cwd)
        try:
            returncode = proc.wait(timeout=timeout if timeout and timeout > 0 else None)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            returncode = proc.wait()
    seconds = round(time.time() - t0, 3)
    phase = _read(os.path.join(out_dir, "phase")).strip() or "start"
    child = None
    result_path = os.path.join(out_dir, "result.json")
    if os.path.isfile(result_path) and not timed_out:
        try:
            with open(result_path, encoding="utf-8") as fh:
                child = json.load(fh)
        except ValueError:
            child = None
    stderr = _read(stderr_path)
    status, reason = classify(child, returncode, phase, stderr, timed_out, timeout)
    if child is not None and not child.get("ok") and child.get("phase"):
        phase = child["phase"]  # the phase the exception happened in (the file says "done")
    result = CompileResult(status, reason, phase=phase if status != "pass" else "done", returncode=returncode,
                           signal=signal_name(-returncode) if returncode is not None and returncode < 0 else None,
                           seconds=seconds, stderr_tail=stderr[-TAIL:], child=child or {}, work_dir=work)
    shutil.rmtree(cache, ignore_errors=True)
    if own and not keep and status != "pass":
        shutil.rmtree(work, ignore_errors=True)
        result.work_dir = None
    elif own:
        result.extra["_own_work"] = True  # the caller reads the artifacts, then cleanup()
    return result
