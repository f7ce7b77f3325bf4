"""`reduce --session S` and `--reduce`: the two Tritons of a finished session, from its build cache.

The culprit's parent is the good Triton and the culprit the bad one; each comes from the
cache exactly as `narrow` gets it (narrow/compilers.py: a cached wheel in a scratch venv, or a
`run --build --artifact` session's cached output), so reducing never builds. The oracle is
the one the session's test runs (`repro.py` or `compile_repro.py` in its command)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.core.secrets import is_secret_name
from tritonbisect.narrow.compilers import builds_for
from tritonbisect.narrow.narrowing import culprit_phase
from tritonbisect.session.session import Session

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.phases import PhaseState

_ORACLE_SCRIPT = re.compile(r"(\S+)/(?:compile_repro|repro)\.py")


@dataclass
class Endpoints:
    culprit: str
    parent: str
    oracle: Path
    good_python: str  # the parent's
    bad_python: str  # the culprit's
    env: dict[str, str]  # the session's test environment
    cwd: Path
    codegen_thresholds: tuple[str, ...]


def session_oracle(phase: PhaseState) -> tuple[Path, tuple[str, ...]]:
    """The oracle folder the phase's test runs, and the codegen thresholds its command gives."""
    test = (phase.spec.recipe_config.get("test") or {}).get("command") or ""
    m = _ORACLE_SCRIPT.search(test)
    if not m:
        raise InputError("reduce --session needs a session whose test is an oracle (bisected with --repro TRACE "
                         "--kernel K); this one runs its own test: reduce its oracle folder with --good-python/--bad-python")
    argv = shlex.split(test)
    thresholds = tuple(argv[k + 1] for k, a in enumerate(argv[:-1]) if a == "--threshold")
    return Path(m.group(1).strip("'\"")), thresholds


def endpoints(session: Session, scratch: Path) -> Endpoints:
    """Install the culprit's and its parent's cached builds under `scratch`; their pythons."""
    phase = culprit_phase(session)
    culprit = str(phase.culprit)
    parents = History(phase.spec.repo).parents(culprit)
    if not parents:
        raise InputError(f"culprit {culprit[:12]} has no parent to compare with")
    oracle, thresholds = session_oracle(phase)
    if not oracle.is_dir():
        raise InputError(f"the session's oracle folder {oracle} is gone; reduce a copy of it with --good-python/--bad-python")
    builds = builds_for(session, phase)
    pythons: list[str] = []
    env: dict[str, str] = {}
    for role, commit in (("parent", parents[0]), ("culprit", culprit)):
        root = scratch / role
        root.mkdir(parents=True)
        python, env, _cwd = builds.environment(commit, root)
        pythons.append(_wrapper(root, python, env, session.settings.executor.env))
    return Endpoints(culprit, parents[0], oracle, pythons[0], pythons[1], env, scratch, thresholds)


def _wrapper(root: Path, python: str, env: dict[str, str], names: dict[str, str]) -> str:
    """An executable that runs `python` with this side's own variables (the session's --env,
    resolved for this side's checkout, and its commit): the reducer keeps one set of workers per
    interpreter path, and two `run --build` sides share one interpreter."""
    # a secret is not written into the file: the reducer's workers have it from their environment
    keys = sorted(k for k in {*names, "TRITONBISECT_COMMIT"} if not is_secret_name(k))
    lines = ["#!/bin/sh", *(f"export {k}={shlex.quote(env[k])}" for k in keys if k in env and k.isidentifier()),
             f'exec {shlex.quote(python)} "$@"', ""]
    path = root / "python"
    path.write_text("\n".join(lines), encoding="utf-8")
    path.chmod(0o755)
    return str(path)
