#!/usr/bin/env python3
# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Run a PyTorch minifier's repro script (repro.py, or minifier_launcher.py with `run`) as a bisect
test, and tell its outcomes apart. Written by `tritonbisect repro REPRO.py --out DIR`; standard
library only.

    python minifier_test.py [--timeout S] [--result PATH]

| exit | status | when |
| --- | --- | --- |
| 0 | pass | the script ran to its end: the compiled graph compiled and ran (and, for an accuracy repro, matched eager) |
| 1 | compile_error | Inductor or Triton failed to compile (InductorError, CompilationError, a ptxas or MLIR pass error) |
| 1 | mismatch | an accuracy repro found the compiled result wrong (AccuracyError) |
| 1 | crash | the script was killed by a signal (a segfault, an abort in the compiler) |
| 1 | fail | any other exception |
| 124 | timeout | no end within --timeout seconds (the process group is killed) |
| 125 | env_unusable | torch or triton does not import: the build under test is broken (a skip) |
| 2 | usage_error | the repro script is missing |

The status and a one-line reason also go to --result PATH and to $TRITONBISECT_RESULT.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys

SCRIPT = "repro_script.py"  # <<SCRIPT>>
DEFAULT_TIMEOUT = 1800.0  # <<TIMEOUT>>
EXIT = {"pass": 0, "compile_error": 1, "mismatch": 1, "crash": 1, "fail": 1, "timeout": 124,
        "env_unusable": 125, "usage_error": 2}
COMPILE_MARKERS = ("InductorError", "CompilationError", "CompileError", "PTXASError", "PassManager::run failed",
                   "LLVM ERROR", "MLIRCompilationError", "BackendCompilerFailed")
IMPORT_FAILURE = re.compile(r"(ModuleNotFoundError|ImportError)[^\n]*\b(torch|triton)\b")


def last_error(text):
    """The exception line a traceback ends with (or the last non-empty line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Failed)\b", line):
            return line[:300]
    return lines[-1][:300] if lines else ""


def classify(returncode, output):
    if returncode == 0:
        return "pass", "the repro ran to its end"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "signal %d" % -returncode
        return "crash", "killed by %s: %s" % (name, last_error(output))
    head = "\n".join(output.splitlines()[:60])
    if IMPORT_FAILURE.search(head) and "Traceback" in head and "run_repro" not in head:
        return "env_unusable", "torch or triton does not import: %s" % last_error(output)
    if "AccuracyError" in output or "Bad accuracy detected" in output:
        return "mismatch", last_error(output)
    if any(marker in output for marker in COMPILE_MARKERS):
        return "compile_error", last_error(output)
    return "fail", "exit %d: %s" % (returncode, last_error(output))


def write_result(paths, data):
    for path in paths:
        if path:
            try:
                with open(path, "w") as fh:
                    json.dump(data, fh)
            except OSError:
                pass


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    p.add_argument("--result", metavar="PATH")
    args = p.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, SCRIPT)
    outputs = [args.result, os.environ.get("TRITONBISECT_RESULT")]
    if not os.path.isfile(script):
        status, reason = "usage_error", "the repro script %s is missing" % script
    else:
        proc = subprocess.Popen([sys.executable, script, "run"], cwd=here, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=args.timeout)
            text = out.decode("utf-8", errors="replace")
            sys.stdout.write(text[-20000:])
            status, reason = classify(proc.returncode, text)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            status, reason = "timeout", "no end within %gs" % args.timeout
    write_result(outputs, {"status": status, "reason": reason, "script": SCRIPT})
    print("%s: %s" % (status.upper(), reason))
    return EXIT[status]


if __name__ == "__main__":
    sys.exit(main())
