#!/usr/bin/env python3
# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Fork server of the reducer, run by the Python of one Triton under test.

It imports torch and triton once, then reads one JSON request a line on stdin
({"script", "argv", "cwd", "timeout"}), forks a child that runs the script as __main__ with
that argv, and answers one JSON line on stdout: {"rc", "signal", "seconds"}. A child that
runs past its timeout is killed (rc 124). The child starts from the imported modules, so a
candidate costs a fork instead of a fresh interpreter's imports.
"""

import json
import os
import runpy
import signal
import sys
import time


def child(req):
    os.chdir(req["cwd"])
    sys.argv = [req["script"]] + list(req["argv"])
    sys.path.insert(0, os.path.dirname(os.path.abspath(req["script"])))
    out = os.open(req.get("log", os.devnull), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    code = 0
    try:
        runpy.run_path(req["script"], run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 4
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve():
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # no CUDA initialised before a fork
    try:  # the expensive imports, once
        import torch  # noqa: F401
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except Exception:
        pass  # the child meets the same error and reports it in its own words
    reply = sys.stdout
    sys.stdout = sys.stderr
    reply.write(json.dumps({"ready": True}) + "\n")
    reply.flush()
    for line in sys.stdin:
        req = json.loads(line)
        t0 = time.time()
        pid = os.fork()
        if pid == 0:
            child(req)
        deadline = t0 + float(req.get("timeout") or 600)
        status: int | str | None = None  # a wait status, or "timeout"
        while status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            elif time.time() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = "timeout"
            else:
                time.sleep(0.005)
        answer: dict
        if isinstance(status, str):  # "timeout"
            answer = {"rc": 124, "signal": None}
        elif os.WIFSIGNALED(status):
            answer = {"rc": -os.WTERMSIG(status), "signal": os.WTERMSIG(status)}
        else:
            answer = {"rc": os.WEXITSTATUS(status), "signal": None}
        answer["seconds"] = round(time.time() - t0, 3)
        reply.write(json.dumps(answer) + "\n")
        reply.flush()


if __name__ == "__main__":
    serve()
