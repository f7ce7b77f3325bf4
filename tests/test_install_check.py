"""The install check decides by the wheel (its version and RECORD), not by +git<sha>."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tritonbisect.builds.install_check import (
    WheelUnreadable,
    check_installed,
    git_label,
    parse_record,
    wheel_record,
)

SHA = "0123456789abcdef0123456789abcdef01234567"
RECORD = (
    "triton/__init__.py,sha256=AAA,10\n"
    "triton/_C/libtriton.so,sha256=BBB,999\n"
    "triton-3.6.0.dist-info/METADATA,sha256=CCC,5\n"
    "triton-3.6.0.dist-info/RECORD,,\n"
    "triton-3.6.0.data/scripts/proton,sha256=DDD,3\n"
)
INSTALLED = (
    RECORD.replace("triton-3.6.0.data/scripts/proton", "../../../bin/proton")
    + "triton/__pycache__/__init__.cpython-311.pyc,,\ntriton-3.6.0.dist-info/INSTALLER,sha256=E,4\n"
)
NONE = {"pytorch-triton": None, "pytorch-triton-rocm": None}


def check(version, record=INSTALLED, *, wheel_version="3.6.0", commit=SHA, others=NONE):
    return check_installed({"triton": version, **others}, record, wheel_version=wheel_version,
                           wheel_files=parse_record(RECORD), commit=commit, root=Path("/env"))


def test_parse_record_keeps_the_package_files_only():
    assert parse_record(RECORD) == {"triton/__init__.py": "sha256=AAA",
                                    "triton/_C/libtriton.so": "sha256=BBB"}


def test_git_label():
    assert git_label("3.6.0+git01234567") == "01234567"
    assert git_label("3.5.0+gitabcdef12.cu128") == "abcdef12"
    assert git_label("3.2.0+git0d4682f0") == "0d4682f0"
    assert git_label("3.4.0") is None and git_label("3.6.0+cu128") is None


def test_a_version_without_suffix_passes_by_the_files():
    assert check("3.6.0") == (True, "triton 3.6.0")
    assert check("3.6.0", commit=None) == (True, "triton 3.6.0")  # a published release


def test_suffix_of_the_commit_passes_and_of_another_fails():
    ok, how = check(f"3.6.0+git{SHA[:8]}", wheel_version=f"3.6.0+git{SHA[:8]}")
    assert ok, how
    ok, why = check("3.6.0+gitdeadbeef", wheel_version="3.6.0+gitdeadbeef")
    assert not ok and "+gitdeadbeef" in why and SHA[:12] in why


def test_other_distribution_beside_it_fails():
    ok, why = check("3.6.0", others={"pytorch-triton": "3.5.0", "pytorch-triton-rocm": None})
    assert not ok and "pytorch-triton 3.5.0" in why


def test_wrong_version_or_files_fail():
    ok, why = check("3.5.0")
    assert not ok and "3.5.0" in why and "3.6.0" in why
    ok, why = check("3.6.0", INSTALLED.replace("sha256=BBB", "sha256=XXX"))
    assert not ok and "libtriton.so" in why
    ok, why = check("3.6.0", None)
    assert not ok and "RECORD" in why
    ok, why = check(None)
    assert not ok and "not installed" in why


def test_wheel_record_reads_a_wheel(tmp_path):
    whl = tmp_path / "triton-3.6.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("triton/__init__.py", "x")
        zf.writestr("triton-3.6.0.dist-info/RECORD", RECORD)
    assert wheel_record(whl) == parse_record(RECORD)
    bad = tmp_path / "b.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(WheelUnreadable):
        wheel_record(bad)
