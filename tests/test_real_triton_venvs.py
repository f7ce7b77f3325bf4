"""The release venvs of tests/real_triton.py see the packages of the environment that runs the
tests, not those of the base interpreter that environment was made from."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _fake_torch(site_dir: Path, version: str) -> None:
    (site_dir / "torch").mkdir()
    (site_dir / "torch" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    info = site_dir / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")


def _in(python: Path, code: str) -> str:
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _make_runner(maker: str, runner: Path) -> None:
    if maker == "venv":
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(runner)],
                       check=True)  # fmt: skip
        return
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed (the test extra installs it)")
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, "--system-site-packages", str(runner)],
                   check=True)  # fmt: skip


@pytest.mark.parametrize("maker", ["venv", "uv"])
def test_a_release_venv_made_from_a_venv_sees_that_venvs_torch(tmp_path, maker):
    # the environment running the tests: a venv made by python -m venv or by uv, with its own torch
    runner = tmp_path / "runner"
    _make_runner(maker, runner)
    runner_py = runner / "bin" / "python"
    purelib = Path(_in(runner_py, "import sysconfig; print(sysconfig.get_paths()['purelib'])"))
    _fake_torch(purelib, "0.0.1+runner")

    code = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); from pathlib import Path; import real_triton; "
            f"print(real_triton.environment_key()); real_triton.make_linked_venv(Path({str(tmp_path / 'release')!r}))")
    key = _in(runner_py, code)
    release_py = tmp_path / "release" / "bin" / "python"
    seen = _in(release_py, "import torch; print(torch.__version__, torch.__file__)")
    assert seen.startswith("0.0.1+runner "), seen
    assert seen.split()[1].startswith(str(purelib))

    # the cache key names the environment: the runner's is not this interpreter's
    sys.path.insert(0, str(TESTS))
    import real_triton

    assert key != real_triton.environment_key()
