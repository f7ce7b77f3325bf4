"""What a published PyTorch wheel says about itself: the commit it was built from and the
Triton it pins.

PyTorch nightlies (`2.10.0.dev20251101+cpu`) carry no sha in their version; setup.py writes
the commit into `torch/version.py` as `git_version = '<40 hex>'`, and the wheel's METADATA
pins its Triton (`Requires-Dist: pytorch-triton==3.5.0+git<sha>`).
"""

from __future__ import annotations

import re
import zipfile
from datetime import date
from pathlib import Path

_GIT_VERSION = re.compile(r"""^git_version\s*=\s*['"]([0-9a-f]{7,40})['"]""", re.MULTILINE)
_DEV_DATE = re.compile(r"\.dev(\d{4})(\d{2})(\d{2})")
# pytorch-triton, pytorch-triton-rocm, pytorch-triton-xpu (nightlies); triton, triton-rocm,
# triton-xpu (releases)
_TRITON_PIN = re.compile(r"^Requires-Dist:\s*((?:pytorch-)?triton(?:-rocm|-xpu)?\s*==\s*[^\s;,]+)",
                         re.MULTILINE | re.IGNORECASE)


def dev_date(version: str) -> date | None:
    """The date of a nightly's `.devYYYYMMDD` version, or None."""
    m = _DEV_DATE.search(version)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _top_level_file(zf: zipfile.ZipFile, name: str) -> str | None:
    """The text of `<package>/<name>` for a top-level package of the wheel (not in .data)."""
    for member in zf.namelist():
        parts = member.split("/")
        if len(parts) == 2 and parts[1] == name and not parts[0].endswith((".dist-info", ".data")):
            return zf.read(member).decode("utf-8", "replace")
    return None


def git_version_of_wheel(path: Path) -> str | None:
    """The commit in the wheel's `<package>/version.py` (`git_version = '...'`), or None when
    the file or the assignment is missing, or the file is not a readable wheel."""
    try:
        with zipfile.ZipFile(path) as zf:
            text = _top_level_file(zf, "version.py")
    except (OSError, zipfile.BadZipFile):
        return None
    m = _GIT_VERSION.search(text or "")
    return m.group(1) if m else None


def triton_requirement(path: Path) -> str | None:
    """The pinned Triton the wheel requires (`pytorch-triton==3.5.0+gitabc`), or None."""
    try:
        with zipfile.ZipFile(path) as zf:
            meta = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA")), None)
            text = zf.read(meta).decode("utf-8", "replace") if meta else ""
    except (OSError, zipfile.BadZipFile):
        return None
    m = _TRITON_PIN.search(text)
    return re.sub(r"\s+", "", m.group(1)) if m else None
