"""`tritonbisect narrow SESSION`: which compiler pass did the culprit change?

After a session found its culprit, compile the oracle's kernel (the compile or IR oracle's
job) with the culprit's parent and with the culprit, each from its *cached* build (no new
build), under MLIR_ENABLE_DUMP=1 in the compile oracle's child process; then align the two
pass pipelines and report the first pass whose output differs (narrow.compare). The result is
stored in the session (session.json "extra" -> "narrow") for the report's section
"Where in the compiler".

Builds come from the artifact cache (narrow/compilers.py): a `run --build --artifact` session's
cached output, or a `triton` session's cached wheel in a scratch venv.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.mlir.passes import parse_dumps
from tritonbisect.narrow.codegen import statistic_passes
from tritonbisect.narrow.compare import after_the_dumps, compare_pipelines
from tritonbisect.narrow.compilers import Environment, builds_for
from tritonbisect.narrow.failure import failure, stage_of
from tritonbisect.narrow.lit_test import lit_test
from tritonbisect.narrow.timing import DEFAULT_SAMPLES, time_compiles
from tritonbisect.oracles.compile.standalone import tb_codegen, tb_runner
from tritonbisect.reports.version_names import VersionNames
from tritonbisect.session.session import Session

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.phases import PhaseState

_ORACLE_SCRIPT = re.compile(r"(\S+)/compile_repro\.py")
DUMP_ENV = {"MLIR_ENABLE_DUMP": "1", "TRITON_ALWAYS_COMPILE": "1"}


def culprit_phase(session: Session) -> Any:
    """The phase that found the session's culprit (the last one); InputError when none did."""
    found = [p for p in session.phases() if p.culprit]
    if not found:
        raise InputError(f"session {session.id} has no culprit (status: {session.result().status}); "
                         "give a session whose bisect found one")
    return found[-1]


def oracle_job(folder: Path) -> dict[str, Any]:
    """The compile job of a compile/IR oracle folder (`repro --mode compile`, `--from ttir`),
    its file paths made absolute."""
    try:
        ctx = json.loads((folder / "compile_context.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the oracle {folder}/compile_context.json: {exc}") from None
    job = json.loads(json.dumps(ctx["job"]))
    what = job["what"]
    if what.get("file") and not os.path.isabs(what["file"]):
        what["file"] = str(folder / what["file"])
    return job


def _oracle_job(phase: PhaseState) -> tuple[dict[str, Any], Path, list[str] | None]:
    """The session's compile job, its oracle folder, and the codegen thresholds its test checks
    (None: the test checks no codegen)."""
    test = (phase.spec.recipe_config.get("test") or {}).get("command") or ""
    m = _ORACLE_SCRIPT.search(test)
    if not m:
        raise InputError("narrow compiles the kernel of a compile or IR oracle: the session's test is not one "
                         "(bisect with --repro TRACE --oracle compile|ir)")
    folder = Path(m.group(1).strip("'\""))
    argv = shlex.split(test)
    checks = [argv[k + 1] for k, a in enumerate(argv[:-1]) if a == "--check"]
    thresholds = [argv[k + 1] for k, a in enumerate(argv[:-1]) if a == "--threshold"]
    return oracle_job(folder), folder, thresholds if "codegen" in checks else None


def _compile_with_dumps(job: dict[str, Any], python: str, env: dict[str, str], cwd: Path, work: Path,
                        timeout: float) -> dict[str, Any]:
    res = tb_runner.compile_in_child(job, str(work), timeout=timeout, python=python, env={**env, **DUMP_ENV},
                                     keep=True, cwd=str(cwd))
    stderr = (work / "child.stderr").read_text(encoding="utf-8", errors="replace")
    return {"status": res.status, "reason": res.reason, "dumps": parse_dumps(stderr), "seconds": res.seconds,
            "stage": stage_of(stderr) if res.status != "pass" else None,
            "triton_version": res.triton_version, "artifacts": res.artifacts, "metadata": res.metadata,
            "triton_dir": res.triton_dir}


def codegen_changes(parent: dict[str, Any], culprit: dict[str, Any],
                    thresholds: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The codegen statistics that differ beyond `thresholds` (the oracle's `--threshold`
    values; none given: its defaults)."""
    if parent["status"] != "pass" or culprit["status"] != "pass":
        return []
    stats = [tb_codegen.collect(run["artifacts"], run["metadata"], run["triton_dir"])[0] for run in (parent, culprit)]
    limits = tb_codegen.parse_thresholds(list(thresholds) or None)
    return [d.to_dict() for d in tb_codegen.compare(stats[0], stats[1], limits) if d.over]


def _lit_test(first: dict[str, Any] | None, parent: list[Any], culprit: list[Any]) -> dict[str, Any] | None:
    """The triton-opt lit test of the first pass whose output differs (same input, different
    output); None where the difference is elsewhere (the frontend, passes only one side runs)."""
    if not first or "parent_position" not in first:
        return None
    i, j = first["parent_position"], first["position"]
    if i + 1 >= len(parent) or j + 1 >= len(culprit):
        return None  # the last pass's output is not dumped
    lit = lit_test(parent[i], parent[i + 1].ir, culprit[j + 1].ir)
    if lit is None:
        return None
    return {"pass": lit.pass_arg, "run": lit.run, "checks": lit.checks, "notes": lit.notes, "text": lit.text}


def write_lit_test(result: dict[str, Any], folder: Path) -> Path | None:
    """Write the result's lit test into `folder` (its text replaced by the file's path)."""
    lit = result.get("lit_test")
    if not lit or "text" not in lit:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', lit['pass'])}.mlir"
    path.write_text(lit.pop("text"), encoding="utf-8")
    lit["path"] = str(path)
    return path


def narrow_compiles(job: dict[str, Any], parent: Environment, culprit: Environment, scratch: Path, *,
                    timeout: float = 600.0, codegen: Sequence[str] | None = ()
                    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Compile `job` in both environments with dumps on; (the comparison, each compile's run).
    `codegen`: the thresholds of the codegen check (() its defaults; None: no check, no statistics)."""
    runs = {role: _compile_with_dumps(job, *env, scratch / f"{role}-work", timeout)
            for role, env in (("parent", parent), ("culprit", culprit))}
    p, c = runs["parent"], runs["culprit"]
    if not p["dumps"] or not c["dumps"]:
        missing = [role for role in ("parent", "culprit") if not runs[role]["dumps"]]
        raise InputError(f"no IR dumps from the {' and '.join(missing)} compile under MLIR_ENABLE_DUMP=1 "
                         f"({runs[missing[0]]['status']}: {runs[missing[0]]['reason']})")
    result = compare_pipelines(p["dumps"], c["dumps"], culprit_failed=c["status"] != "pass")
    if c["status"] != "pass":
        failed = failure(c["stage"], c["reason"], c["dumps"][-1].label)
        result["failed"] = failed
        if failed["after_mlir"]:  # every MLIR pass ran: the last dumped one is not where it failed
            result["running_pass"] = None
    lit = _lit_test(result.get("first_difference"), p["dumps"], c["dumps"])
    if lit is not None:
        result["lit_test"] = lit
    if result["first_difference"] is None and p["status"] == c["status"] == "pass":
        later = after_the_dumps(p["artifacts"] or {}, c["artifacts"] or {})
        if later is not None:  # the same PTX, another SASS: ptxas
            result["after_dumps"] = later
    changes = [] if codegen is None else codegen_changes(p, c, codegen)
    if changes:  # a codegen regression: which pass changed each statistic's stand-in ops
        result["codegen"] = statistic_passes(p["dumps"], c["dumps"], changes)
    result["compiles"] = {role: {k: runs[role][k] for k in ("status", "reason", "seconds", "triton_version")}
                          for role in runs}
    return result, runs


def wants_time(session: Session) -> bool:
    """Whether the session bisected a compile time (--regress compile-time): narrowing it asks
    which part of the compile grew, not which pass's output changed."""
    return session.settings.verdicts.regress == "compile-time"


def narrow_session(session: Session, *, timeout: float = 600.0, keep: Path | None = None,
                   time_it: bool = False, samples: int = DEFAULT_SAMPLES) -> dict[str, Any]:
    """Narrow the session's culprit to a pass; the result is saved in the session and returned.
    `time_it`: name the part of the compile whose time grew most instead (narrow --time),
    from `samples` timed compiles on each side."""
    t0 = time.monotonic()
    phase = culprit_phase(session)
    culprit = str(phase.culprit)
    history = History(phase.spec.repo)
    parents = history.parents(culprit)
    if not parents:
        raise InputError(f"culprit {culprit[:12]} has no parent to compare with")
    parent = parents[0]
    job, oracle, codegen = _oracle_job(phase)
    builds = builds_for(session, phase)
    scratch = Path(tempfile.mkdtemp(prefix="tb-narrow-", dir=keep))
    try:
        envs = []
        for role, commit in (("parent", parent), ("culprit", culprit)):
            root = scratch / role
            root.mkdir()
            envs.append(builds.environment(commit, root))
        if time_it:
            result = time_compiles(job, envs[0], envs[1], scratch, samples=samples, timeout=timeout)
        else:
            result, _runs = narrow_compiles(job, envs[0], envs[1], scratch, timeout=timeout, codegen=codegen)
    finally:
        if keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    result.update(
        phase=phase.spec.name,
        culprit=culprit,
        parent=parent,
        oracle=str(oracle),
        kernel=(job.get("what") or {}).get("kernel") or Path((job.get("what") or {}).get("file", "?")).stem,
        builds=0,
        seconds=round(time.monotonic() - t0, 3),
        dumps=str(scratch) if keep is not None else None,
    )
    names = VersionNames.of(session, phase)
    if names is not None:  # `wheels`: the versions the ladder's commits stand for
        result["versions"] = {"package": names.package, "culprit": names.name(culprit), "parent": names.name(parent)}
    if time_it:
        result["dumps"] = None
        session.extra["narrow_time"] = result
        session.save()
        return result
    if phase.spec.recipe_name != "wheel":  # a version ladder has no sources: `wheels` fills it in
        from tritonbisect.narrow.next_hint import next_hint, rerun_command

        hint = next_hint(result, phase.spec.repo, phase.spec.good, phase.spec.bad, rerun_command(session.argv))
        if hint is not None:
            result["prefer_pass"] = hint
    write_lit_test(result, session.dir / "narrow")
    session.extra["narrow"] = result
    session.save()
    return result
