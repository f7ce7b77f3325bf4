"""PyTorch nightlies: the commit and the pinned Triton read out of real wheel files, and
which dated nightlies are worth reading at all."""

from __future__ import annotations

import subprocess
import zipfile
from datetime import date
from pathlib import Path

import pytest

from tritonbisect.builds.wheel_index import WheelFile
from tritonbisect.builds.wheel_version import (
    dev_date,
    git_version_of_wheel,
    triton_requirement,
)
from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.wheels.nightlies import torch_nightly_commits

SHA = "0123456789abcdef0123456789abcdef01234567"


def _wheel(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def test_dev_dates():
    assert dev_date("2.10.0.dev20251101+cpu") == date(2025, 11, 1)
    assert dev_date("2.6.0.dev20241231") == date(2024, 12, 31)
    assert dev_date("2.6.0") is None and dev_date("2.6.0.dev20241399") is None


def test_git_version_and_triton_pin_from_the_wheel(tmp_path):
    w = _wheel(tmp_path / "torch-2.10.0.dev20251101+cpu-cp311-cp311-linux_x86_64.whl", {
        "torch/version.py": f"from typing import Optional\n__version__ = '2.10.0.dev20251101+cpu'\n"
                            f"debug = False\ncuda: Optional[str] = None\ngit_version = '{SHA}'\n",
        "torch/_C/version.py": "git_version = 'ffffffffffffffffffffffffffffffffffffffff'\n",
        "torch-2.10.0.dev20251101+cpu.dist-info/METADATA":
            "Name: torch\nRequires-Dist: filelock\nRequires-Dist: pytorch-triton==3.5.0+git7416ffcb ; "
            "platform_system == \"Linux\"\n",
    })
    assert git_version_of_wheel(w) == SHA
    assert triton_requirement(w) == "pytorch-triton==3.5.0+git7416ffcb"
    bare = _wheel(tmp_path / "t.whl", {"torch/__init__.py": "", "x.dist-info/METADATA": "Name: torch\n"})
    assert git_version_of_wheel(bare) is None and triton_requirement(bare) is None
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"not a zip")
    assert git_version_of_wheel(broken) is None and triton_requirement(broken) is None


def _file(version: str) -> WheelFile:
    return WheelFile(f"torch-{version}-cp311-cp311-linux_x86_64.whl", f"http://x/{version}", None, version,
                     (("cp311", "cp311", "linux_x86_64"),))


def test_only_dated_nightlies_near_the_range_are_read():
    order = ["b" * 40, "c" * 40, "d" * 40]
    good = "a" * 40
    read = []
    commits = {"2.10.0.dev20251102+cpu": "b" * 40, "2.10.0.dev20251104+cpu": "d" * 40,
               "2.10.0.dev20251110+cpu": "e" * 40, "2.10.0.dev20251001+cpu": "b" * 40}

    def read_commit(f):
        read.append(f.version)
        return commits[f.version], "5" * 64

    files = [_file(v) for v in [*commits, "2.9.0", "2.10.0a0+gitccccccc"]]
    out = torch_nightly_commits(files, order, good, (date(2025, 11, 2), date(2025, 11, 5)), read_commit)
    assert sorted(read) == ["2.10.0.dev20251102+cpu", "2.10.0.dev20251104+cpu"]  # the window +- a day
    assert {k: v["version"] for k, v in out.wheels.items()} == {
        "b" * 40: "2.10.0.dev20251102+cpu", "d" * 40: "2.10.0.dev20251104+cpu",
        "c" * 40: "2.10.0a0+gitccccccc"}  # a +git<sha> version needs no reading
    assert out.wheels["b" * 40]["sha256"] == "5" * 64  # the index gave none: the download's
    assert (out.read, out.no_commit, out.elsewhere) == (2, 0, 0)


def test_several_builds_of_a_date_are_refused_in_one_line():
    files = [_file("2.10.0.dev20251102+cpu"), _file("2.10.0.dev20251102+cu128")]
    with pytest.raises(InputError, match=r"2 builds of each nightly \(\+cpu, \+cu128\).*nightly/cpu"):
        torch_nightly_commits(files, ["b" * 40], "a" * 40, (date(2025, 11, 2), date(2025, 11, 2)),
                              lambda f: pytest.fail("nothing is downloaded before the refusal"))


def test_a_nightly_branch_commit_is_taken_to_the_main_commit_it_names(tmp_path):
    """PyTorch's `nightly` branch: a daily commit `YYYY-MM-DD nightly release (<main sha>)`,
    which a wheel's git_version may name instead of the main commit (a real git repository)."""
    repo = tmp_path / "pytorch"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for i in range(3):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", f"main {i}"], check=True)
    mains = subprocess.run([*git, "rev-list", "--reverse", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.split()
    subprocess.run([*git, "checkout", "-q", "--orphan", "nightly"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", f"2025-11-03 nightly release ({mains[1]})"],
                   check=True)
    branch = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    history = History(repo)
    by_version = {"2.10.0.dev20251103+cpu": branch, "2.10.0.dev20251104+cpu": None,
                  "2.10.0.dev20251102+cpu": "9" * 40}  # no git_version; a commit this checkout lacks

    found = torch_nightly_commits([_file(v) for v in by_version], mains[1:], mains[0],
                                  (date(2025, 11, 2), date(2025, 11, 4)), lambda f: (by_version[f.version], None),
                                  lambda shas: history.subjects(shas, known_only=True))
    assert {k: v["version"] for k, v in found.wheels.items()} == {mains[1]: "2.10.0.dev20251103+cpu"}
    assert (found.read, found.no_commit, found.elsewhere) == (3, 1, 1)


@pytest.mark.slow
def test_the_real_torch_wheel_names_its_commit(tmp_path):
    """The published torch 2.13.0 CPU wheel from the package index (the one the tests run with):
    its torch/version.py carries the commit; a CPU build pins no Triton."""
    import sys

    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "torch==2.13.0", "-d",
                           str(tmp_path)], capture_output=True, text=True, timeout=900)
    wheels = list(tmp_path.glob("torch-2.13.0*.whl"))
    if proc.returncode != 0 or not wheels:
        pytest.skip(f"the torch 2.13.0 wheel cannot be downloaded here: {proc.stderr.strip()[-200:]}")
    torch = pytest.importorskip("torch")

    version_py = (Path(torch.__file__).parent / "version.py").read_text()
    commit = git_version_of_wheel(wheels[0])
    assert commit is not None and len(commit) == 40 and f"git_version = '{commit}'" in version_py
    assert triton_requirement(wheels[0]) is None
