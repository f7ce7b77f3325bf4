"""Runs candidates: each one under the good Triton (recording the reference outputs), then,
when that ran clean, under the bad one (comparing with them), in parallel, each in a forked
child with a timeout, and each verdict cached by the candidate's content."""

from __future__ import annotations

import functools
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from tritonbisect.reduce import oracle_io
from tritonbisect.reduce.oracle_io import Candidate, OracleDir
from tritonbisect.reduce.pool import Pool
from tritonbisect.reduce.verdict import BROKEN, Verdict, bad_signature, triton_version


@functools.lru_cache(maxsize=8)
def installed_triton(python: str) -> str:
    """The Triton distribution installed for `python` (read from its metadata, not imported:
    the compiler under test may be the one that crashes), or "?"."""
    code = ("import importlib.metadata as m\n"
            "for d in ('triton', 'pytorch-triton', 'pytorch-triton-rocm', 'triton-nightly'):\n"
            "    try: print(m.version(d)); break\n"
            "    except m.PackageNotFoundError: pass\n")
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.stdout.strip() or "?"


@dataclass
class Settings:
    good_python: str
    bad_python: str
    jobs: int = 2
    timeout: float = 120.0
    keep: bool = False  # keep every candidate's folder (else only while it runs)
    codegen_thresholds: tuple[str, ...] = ()  # compile oracles: METRIC=LIMIT, as compile_repro.py takes them


class Runner:
    def __init__(self, oracle: OracleDir, work: Path, settings: Settings, pool: Pool) -> None:
        self.oracle, self.work, self.settings, self.pool = oracle, work, settings, pool
        self.cache: dict[str, Verdict] = {}
        self.tests = 0  # candidates run (cache hits not counted)
        self.hits = 0
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=max(1, settings.jobs))

    def verdict(self, cand: Candidate) -> Verdict:
        key = cand.key()
        with self._lock:
            if key in self.cache:
                self.hits += 1
                return self.cache[key]
        found = self._run(cand, key)
        with self._lock:
            self.cache[key] = found
            self.tests += 1
        return found

    def _run(self, cand: Candidate, key: str) -> Verdict:
        t0 = time.monotonic()
        folder = self.work / "candidates" / key
        script = oracle_io.write(self.oracle, cand, folder)
        s = self.settings
        try:
            golden = "golden_codegen.json" if self.oracle.compiles else "golden.pt"
            good = self.pool.run(s.good_python, script, ["--record-golden", golden, "--result", "good.json",
                                                         "--timeout", str(s.timeout)],
                                 timeout=s.timeout + 30, log=folder / "good.log")  # fmt: skip
            if good.rc != 0:
                sig = f"good: exit {good.rc}" if good.signal is None else f"good: signal {good.signal}"
                return Verdict(BROKEN, sig, time.monotonic() - t0)
            check = []
            if self.oracle.compiles:  # the bad compile against the good one's statistics
                check = ["--check", "codegen", *[a for t in s.codegen_thresholds for a in ("--codegen-threshold", t)]]
            bad = self.pool.run(s.bad_python, script, ["--golden", golden, "--result", "bad.json",
                                                       "--timeout", str(s.timeout), *check],
                                timeout=s.timeout + 30, log=folder / "bad.log")  # fmt: skip
            sig, reason = bad_signature(bad.rc, bad.signal, folder / "bad.json", folder / "bad.log")
            # a compiler that crashed never said its version: its environment's metadata does
            good_v, bad_v = triton_version(folder / "good.json"), triton_version(folder / "bad.json")
            versions = (good_v if good_v != "?" else installed_triton(s.good_python),
                        bad_v if bad_v != "?" else installed_triton(s.bad_python))
            return Verdict(sig, reason, time.monotonic() - t0, versions)
        finally:
            if not s.keep:
                shutil.rmtree(folder, ignore_errors=True)

    def first_interesting(self, cands: Iterable[Candidate], wanted: str,
                          before: Callable[[list[Candidate]], None] | None = None) -> Candidate | None:
        """The first candidate, in the given order, that shows `wanted`; runs them `jobs` at a
        time and stops at the first batch holding one. `before(batch)` prepares a batch."""
        n = max(1, self.settings.jobs)
        it = iter(cands)
        while batch := list(islice(it, n)):
            if before is not None:
                before(batch)
            verdicts = list(self._executor.map(self.verdict, batch))
            for cand, v in zip(batch, verdicts, strict=True):
                if v.shows(wanted):
                    return cand
        return None

    def close(self) -> None:
        self._executor.shutdown(wait=True)
