"""Long-lived fork servers (worker_main.py), one set per Python under test.

A run is one request to an idle server; servers are started lazily, at most `size` per
Python, and one that dies is replaced. `fresh=True` spawns a new interpreter per run instead
(to measure what the fork servers save)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.core.secrets import without_secrets

WORKER = Path(__file__).with_name("worker_main.py")


@dataclass
class RunResult:
    rc: int
    signal: int | None
    seconds: float


class _Server:
    def __init__(self, python: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([python, "-u", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
        assert self.proc.stdout is not None
        hello = self.proc.stdout.readline()
        if not hello.strip():
            raise OSError(f"the reducer's worker did not start under {python}")

    def run(self, request: dict) -> RunResult:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.strip():
            raise OSError("the reducer's worker ended")
        answer = json.loads(line)
        return RunResult(int(answer["rc"]), answer.get("signal"), float(answer.get("seconds", 0.0)))

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Pool:
    def __init__(self, env: dict[str, str] | None = None, *, fresh: bool = False) -> None:
        # the candidates run the trace's kernel code: no secret of ours (core/secrets.py)
        self.env = without_secrets(os.environ) if env is None else dict(env)
        self.fresh = fresh
        self._idle: dict[str, list[_Server]] = {}
        self._all: list[_Server] = []
        self._lock = threading.Lock()
        self.started = 0

    def _take(self, python: str) -> _Server:
        with self._lock:
            idle = self._idle.setdefault(python, [])
            if idle:
                return idle.pop()
        server = _Server(python, self.env)
        with self._lock:
            self._all.append(server)
            self.started += 1
        return server

    def run(self, python: str, script: Path, argv: list[str], *, timeout: float, log: Path) -> RunResult:
        """Run `python script argv` (in the script's folder) and wait at most `timeout` s."""
        script, log = script.resolve(), log.resolve()
        if self.fresh:
            return self._spawn(python, script, argv, timeout=timeout, log=log)
        request = {"script": str(script), "argv": argv, "cwd": str(script.parent), "timeout": timeout,
                   "log": str(log)}
        server = self._take(python)
        try:
            result = server.run(request)
        except OSError:
            server.close()
            with self._lock:
                self._all.remove(server)
            raise
        with self._lock:
            self._idle[python].append(server)
        return result

    def _spawn(self, python: str, script: Path, argv: list[str], *, timeout: float, log: Path) -> RunResult:
        t0 = time.monotonic()
        with open(log, "w") as out:
            try:
                proc = subprocess.run([python, str(script), *argv], cwd=script.parent, env=self.env,
                                      stdout=out, stderr=subprocess.STDOUT, timeout=timeout)  # fmt: skip
            except subprocess.TimeoutExpired:
                return RunResult(124, None, time.monotonic() - t0)
        rc = proc.returncode
        return RunResult(rc, -rc if rc < 0 else None, time.monotonic() - t0)

    def close(self) -> None:
        with self._lock:
            servers, self._all, self._idle = self._all, [], {}
        for server in servers:
            server.close()
