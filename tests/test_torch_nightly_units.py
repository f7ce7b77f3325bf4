"""PyTorch nightlies: the commit and the pinned Triton read out of real wheel files, and
which dated nightlies are worth reading at all."""

from __future__ import annotations

import zipfile
from datetime import date
from pathlib import Path

from tritonbisect.bisect.nightlies import torch_nightly_commits
from tritonbisect.build.wheel_index import WheelFile
from tritonbisect.build.wheel_version import dev_date, git_version_of_wheel, triton_requirement

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
        return commits[f.version]

    files = [_file(v) for v in [*commits, "2.9.0", "2.10.0a0+gitccccccc"]]
    out = torch_nightly_commits(files, order, good, (date(2025, 11, 2), date(2025, 11, 5)), read_commit)
    assert sorted(read) == ["2.10.0.dev20251102+cpu", "2.10.0.dev20251104+cpu"]  # the window +- a day
    assert {k: v["version"] for k, v in out.items()} == {
        "b" * 40: "2.10.0.dev20251102+cpu", "d" * 40: "2.10.0.dev20251104+cpu",
        "c" * 40: "2.10.0a0+gitccccccc"}  # a +git<sha> version needs no reading
