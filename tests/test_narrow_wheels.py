"""Narrowing a `triton` session: the cached wheels of the culprit and its parent, installed into
scratch venvs (slow: two pip wheels and two venvs). The wheels are the toy pass-pipeline Triton's
(toyworld/pass_triton.py) packaged by pip, put in the session's artifact cache as a Triton
build would; narrowing must name the planted pass without building anything.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testing.toyworld.pass_triton import PLANTED_PASS, make_pass_triton
from tritonbisect.builds.cache import ArtifactCache
from tritonbisect.narrow.narrowing import narrow_session
from tritonbisect.options.bisect_options import BisectSettings
from tritonbisect.oracles.compile.folder import compile_commands
from tritonbisect.oracles.compile.ir_oracle import generate_ir_file_oracle
from tritonbisect.session.phases import PhaseSpec
from tritonbisect.session.session import Session

pytestmark = pytest.mark.slow

PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "triton"
version = "3.6.0+toy"

[tool.setuptools.packages.find]
include = ["triton*"]
"""


def _wheel(repo: Path, commit: str, out: Path) -> Path:
    tree = out / f"src-{commit[:8]}"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "python"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    (tree / "python" / "pyproject.toml").write_text(PYPROJECT)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                           str(out / commit[:8]), str(tree / "python")], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {proc.stderr[-300:]}")
    return next((out / commit[:8]).glob("*.whl"))


def test_a_triton_session_is_narrowed_from_its_cached_wheels(tmp_path: Path) -> None:
    truth = make_pass_triton(tmp_path / "toy" / "repo")
    repo = tmp_path / "toy" / "repo"
    workdir = tmp_path / "home"
    cache = ArtifactCache(workdir / "cache")
    for commit in (truth["parent"], truth["culprit"]):
        wheel = _wheel(repo, commit, tmp_path / "wheels")
        key = ArtifactCache.key("toy", commit, "triton", {}, "cp3", "")
        cache.put(key, wheel, {"commit": commit, "recipe": "triton"})
    oracle = tmp_path / "oracle"
    generate_ir_file_oracle(Path(truth["ttir"]), "cuda:90", oracle)
    phase = PhaseSpec(name="triton", repo=repo, good=truth["order"][0], bad=truth["order"][-1], recipe_name="triton",
                      recipe_config={"test": compile_commands(oracle).to_dict()})
    session = Session.create(workdir, BisectSettings(workdir=workdir), [phase])
    state = session._phases[0]
    state.culprit, state.status = truth["culprit"], "found"
    session.save()
    result = narrow_session(Session.open(workdir, session.id))
    assert result["builds"] == 0
    assert result["compiles"]["parent"]["triton_version"] == "3.6.0+toy"
    assert result["first_difference"]["pass"].startswith(PLANTED_PASS)
    assert result["compiles"]["culprit"]["status"] == "compile_error"
