"""Runs candidates: each one a compile oracle folder of its own, judged by its compile_repro.py
under one Triton in a process of its own (a compiler abort costs that candidate only), several
at a time, each result cached by content (the kernel, the changed context, the environment
change, the check, and which Triton build ran it)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.files import atomic_write_text
from tritonbisect.reduce import oracle_io
from tritonbisect.reduce.oracle_io import Candidate, OracleDir
from tritonbisect.workaround.changes import Change, apply

# outcomes that belong to the candidate, never to the harness: only these are cached
CACHED = ("pass", "perf", "compile_error", "crash", "out_of_resources", "unreadable_ir", "timeout")


@dataclass
class Trial:
    change: Change
    status: str
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)
    over_limits: list[dict[str, Any]] = field(default_factory=list)
    differences: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # options this Triton does not know (no change made)
    seconds: float = 0.0
    cached: bool = False
    cost: float | None = None
    moved: list[str] = field(default_factory=list)  # what the cost counts, in words

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_cache(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "stats": self.stats, "over_limits": self.over_limits,
                "differences": self.differences, "dropped": self.dropped, "seconds": self.seconds}


@dataclass
class Side:
    """One Triton: its Python, the environment its runs get, and its build's fingerprint."""

    python: str
    fingerprint: str
    env: dict[str, str] = field(default_factory=dict)


class Runner:
    def __init__(self, oracle: OracleDir, work: Path, cache_dir: Path, *, timeout: float, jobs: int,
                 progress: Callable[[Trial], None] | None = None) -> None:
        self.oracle, self.work, self.cache_dir = oracle, work, cache_dir
        self.timeout, self.jobs, self.progress = timeout, max(1, jobs), progress
        self.ran = 0  # candidates compiled (cache hits not counted)
        self.hits = 0
        self._lock = threading.Lock()
        self._serial = 0

    def key(self, side: Side, change: Change, args: Sequence[str], golden: str) -> str:
        ctx = apply(self.oracle.original.context, change)
        # the golden by its content: its path is a fresh folder each search
        given = ["<golden>" if i and args[i - 1] == "--golden" else a for i, a in enumerate(args)]
        text = json.dumps({"source": self.oracle.original.source, "context": ctx, "env": dict(change.env),
                           "args": given, "golden": golden, "triton": side.fingerprint,
                           "python": os.path.realpath(side.python), "side_env": side.env}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def run(self, side: Side, change: Change, args: Sequence[str] = (), golden: str = "") -> Trial:
        """`change` judged by the oracle under `side`'s Triton; `args` go to compile_repro.py
        (--golden/--check), `golden` is the golden's content (part of the cache key)."""
        key = self.key(side, change, args, golden)
        cached = self._cached(key, change)
        if cached is not None:
            with self._lock:
                self.hits += 1
            return cached
        trial = self._compile(side, change, args, key)
        with self._lock:
            self.ran += 1
        if trial.status in CACHED:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.cache_dir / f"{key}.json", json.dumps(trial.to_cache(), sort_keys=True))
        return trial

    def run_all(self, side: Side, changes: Sequence[Change], args: Sequence[str] = (), golden: str = "") -> list[Trial]:
        """Every change, `jobs` at a time; the trials in the changes' order."""
        def one(change: Change) -> Trial:
            trial = self.run(side, change, args, golden)
            if self.progress is not None:
                self.progress(trial)
            return trial

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            return list(pool.map(one, changes))

    def _cached(self, key: str, change: Change) -> Trial | None:
        path = self.cache_dir / f"{key}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("status") not in CACHED:
            return None
        return Trial(change, str(data["status"]), str(data.get("reason") or ""), dict(data.get("stats") or {}),
                     list(data.get("over_limits") or []), list(data.get("differences") or []),
                     list(data.get("dropped") or []), float(data.get("seconds") or 0.0), cached=True)

    def _compile(self, side: Side, change: Change, args: Sequence[str], key: str) -> Trial:
        with self._lock:
            self._serial += 1
            folder = self.work / f"c{self._serial:04d}-{key[:8]}"
        script = oracle_io.write(self.oracle, Candidate(self.oracle.original.source,
                                                        apply(self.oracle.original.context, change)), folder)
        result = folder / "result.json"
        env = {**os.environ, **side.env, **dict(change.env)}
        env.pop("TRITONBISECT_RESULT", None)
        t0 = time.monotonic()
        try:
            with open(folder / "run.log", "w") as log:
                proc = subprocess.run([side.python, str(script), "--result", str(result), "--timeout", f"{self.timeout:g}",
                                       *args], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      timeout=self.timeout + 60)  # fmt: skip
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        seconds = round(time.monotonic() - t0, 3)
        try:
            data = json.loads(result.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        shutil.rmtree(folder, ignore_errors=True)
        status = str(data.get("status") or "")
        if not status or status == "running":
            status, reason = ("timeout", f"no result after {self.timeout:g}s") if rc is None else \
                ("usage_error", f"the oracle ended (exit {rc}) without a result")
        else:
            reason = str(data.get("reason") or status)
        compiled = data.get("compile") if isinstance(data.get("compile"), dict) else {}
        return Trial(change, status, reason, dict(data.get("stats") or {}), list(data.get("over_limits") or []),
                     list(data.get("differences") or []), list(compiled.get("dropped_options") or []), seconds)


def options_dropped(trial: Trial) -> bool:
    """The change set an option this Triton does not know: it compiled the original."""
    return any(k in trial.dropped for k, _ in trial.change.options)
