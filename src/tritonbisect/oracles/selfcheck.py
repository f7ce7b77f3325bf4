"""Check an oracle against itself: no false alarm over reruns, planted bugs detected.

Used by the tests and by bench/oracle_bench.py. Scripts run in the *target* Python (with torch
and triton), as real subprocesses. To keep the cost of importing torch down, several oracle
scripts can run one after the other in a single process (`run_batch`, through runpy): each
still runs its own `main()` exactly as from the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.oracles.mutations import MUTATIONS, mutate_script

DETECTED = {"mismatch", "compile_error", "runtime_error", "timeout", "crash"}

_DRIVER = r"""
import json, runpy, sys
jobs = json.loads(sys.argv[1])
for job in jobs:
    sys.argv = [job["script"], *job["argv"]]
    rc = None
    try:
        runpy.run_path(job["script"], run_name="__main__")
        rc = 0
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:
        print("batch: %s raised %r" % (job["script"], exc), file=sys.stderr)
        rc = -1
    print("@@TRITONBISECT_JOB " + json.dumps({"id": job["id"], "rc": rc}), flush=True)
"""


@dataclass
class Job:
    id: str
    script: Path
    argv: list[str]
    result: Path  # the --result file the script writes


@dataclass
class JobResult:
    id: str
    rc: int | None
    status: str
    reason: str
    data: dict[str, Any] = field(default_factory=dict)


def _read_result(job: Job, rc: int | None) -> JobResult:
    try:
        data = json.loads(job.result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    status = data.get("status") or "missing"
    if (rc is not None and rc < 0) or status == "running":  # killed, or died without a verdict
        status = "crash"
    return JobResult(job.id, rc, status, str(data.get("reason", "")), data)


def run_one(job: Job, *, python: str = sys.executable, env: Mapping[str, str] | None = None,
            timeout: float | None = None) -> JobResult:
    try:
        proc = subprocess.run([python, str(job.script), *job.argv, "--result", str(job.result)],
                              env=dict(env) if env is not None else None, capture_output=True, text=True,
                              timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        return JobResult(job.id, None, "timeout", f"killed after {timeout}s")
    return _read_result(job, rc)


def run_batch(jobs: Sequence[Job], *, python: str = sys.executable, env: Mapping[str, str] | None = None,
              timeout: float | None = None) -> dict[str, JobResult]:
    """Run the scripts one after the other in one Python process; a job whose process died
    (a crash) and every job after it are re-run one by one."""
    payload = [{"id": j.id, "script": str(j.script), "argv": [*j.argv, "--result", str(j.result), "--timeout", "0"]}
               for j in jobs]
    done: dict[str, int | None] = {}
    try:
        proc = subprocess.run([python, "-c", _DRIVER, json.dumps(payload)], env=dict(env) if env is not None else None,
                              capture_output=True, text=True, timeout=timeout)
        for line in proc.stdout.splitlines():
            if line.startswith("@@TRITONBISECT_JOB "):
                item = json.loads(line.split(" ", 1)[1])
                done[item["id"]] = item["rc"]
    except subprocess.TimeoutExpired:
        pass
    results: dict[str, JobResult] = {}
    for job in jobs:
        if job.id in done:
            results[job.id] = _read_result(job, done[job.id])
        else:
            results[job.id] = run_one(job, python=python, env=env, timeout=timeout)
    return results


def interpreter_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["TRITON_INTERPRET"] = "1"
    env.pop("TRITONBISECT_RESULT", None)
    return env


def plant_mutations(oracle_dir: Path, kernel: str, mutations: Sequence[str] = MUTATIONS) -> dict[str, Path | None]:
    """Write repro_<mutation>.py beside repro.py; None for a mutation that does not apply."""
    script = (oracle_dir / "repro.py").read_text(encoding="utf-8")
    context = json.loads((oracle_dir / "context.json").read_text(encoding="utf-8"))
    dtypes = {a["name"]: a["dtype"] for a in context["args"] if a["kind"] == "tensor"}
    out: dict[str, Path | None] = {}
    for mutation in mutations:
        text = mutate_script(script, kernel, mutation, dtypes)
        if text is None:
            out[mutation] = None
            continue
        path = oracle_dir / f"repro_{mutation}.py"
        path.write_text(text, encoding="utf-8")
        out[mutation] = path
    return out


@dataclass
class SelfCheck:
    record: JobResult
    reruns: JobResult | None
    mutations: dict[str, JobResult | None]  # None: not applicable
    full: JobResult | None = None  # one compare with every input vector (the default)

    @property
    def detected(self) -> dict[str, bool]:
        return {m: r.status in DETECTED for m, r in self.mutations.items() if r is not None}


def self_check(oracle_dir: Path, kernel: str, *, repeat: int = 20, vectors: str | None = None,
               mutations: Sequence[str] = MUTATIONS, python: str = sys.executable,
               env: Mapping[str, str] | None = None, timeout: float | None = 900) -> SelfCheck:
    """Record a golden, compare `repeat` times, then run every planted mutation — all in one
    Python process (one import of torch), each script through its own command line.

    With `vectors` (e.g. "recorded") the reruns use only those input vectors, and one more
    compare runs with every vector (the oracle's default)."""
    oracle_dir = Path(oracle_dir)
    golden = oracle_dir / "golden.pt"
    script = oracle_dir / "repro.py"
    vec = ["--vectors", vectors] if vectors else []
    jobs = [
        Job("record", script, ["--record-golden", str(golden)], oracle_dir / "record.json"),
        Job("reruns", script, ["--golden", str(golden), "--repeat", str(repeat), *vec], oracle_dir / "reruns.json"),
    ]
    if vectors:
        jobs.append(Job("full", script, ["--golden", str(golden)], oracle_dir / "full.json"))
    planted = plant_mutations(oracle_dir, kernel, mutations)
    for mutation, path in planted.items():
        if path is not None:
            jobs.append(Job(mutation, path, ["--golden", str(golden)], oracle_dir / f"mutant_{mutation}.json"))
    results = run_batch(jobs, python=python, env=env, timeout=timeout)
    return SelfCheck(
        record=results["record"],
        reruns=results["reruns"],
        mutations={m: (results[m] if p is not None else None) for m, p in planted.items()},
        full=results.get("full"),
    )
