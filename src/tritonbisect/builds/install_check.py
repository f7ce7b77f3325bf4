"""Is the Triton in the target env the wheel we installed? Decided by what we built.

The version string is not proof: real Triton's setup.py adds `+git<sha>` only when it
believes it runs in a git checkout (some releases test `(Path(__file__).parent / ".git")
.is_dir()`, false in a `git worktree`, where `.git` is a file; newer ones skip it on
`release*` branches), and published release wheels carry none. So the check compares the
installed distribution with the wheel itself: its version from the wheel's name and the
files pip installed (the installed RECORD against the wheel's RECORD, path by path, hash by
hash). A `+git<hex>` label that names another commit still fails: that build did not come
from the commit under test. No other Triton distribution may sit beside it.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path

_GIT_LABEL = re.compile(r"\+(?:.*[.])?git([0-9a-f]{7,40})(?:[.]|$)")


class WheelUnreadable(Exception):
    """The file is not a readable wheel (no RECORD)."""


def parse_record(text: str) -> dict[str, str]:
    """RECORD text -> {path: hash} for the package's own files (not its .dist-info, which
    pip rewrites with INSTALLER, REQUESTED, direct_url.json; not the .pyc files pip adds)."""
    out: dict[str, str] = {}
    for row in csv.reader(io.StringIO(text)):
        if not row or not row[0]:
            continue
        path = row[0].replace("\\", "/")
        top = path.split("/", 1)[0]
        # .data/ files land elsewhere (bin/, include/) under other paths
        if top.endswith((".dist-info", ".data")) or path.endswith(".pyc") or "/__pycache__/" in f"/{path}":
            continue
        out[path] = row[1] if len(row) > 1 else ""
    return out


def wheel_record(wheel: Path) -> dict[str, str]:
    """The wheel's own RECORD, as parse_record gives it."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/RECORD", n)]
            if len(names) != 1:
                raise WheelUnreadable(f"{Path(wheel).name} has no single .dist-info/RECORD")
            return parse_record(zf.read(names[0]).decode("utf-8"))
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise WheelUnreadable(f"{Path(wheel).name} is not a readable wheel: {exc}") from exc


def normalize_version(version: str) -> str:
    return version.strip().lower().replace("_", "-")


def git_label(version: str) -> str | None:
    """The commit prefix of a `+git<hex>` local version label (also `+abc.git<hex>`), else None."""
    m = _GIT_LABEL.search(version.lower())
    return m.group(1) if m else None


def check_installed(
    versions: Mapping[str, str | None],
    installed_record: str | None,
    *,
    wheel_version: str,
    wheel_files: Mapping[str, str],
    commit: str | None,
    root: Path,
    dist: str = "triton",
) -> tuple[bool, str]:
    """(ok, how or why not). `versions`: every Triton distribution's installed version;
    `installed_record`: the installed dist's RECORD text (None when unreadable); `commit`:
    the commit the wheel was built from (None for a published release: no commit to match)."""
    version = versions.get(dist)
    if version is None:
        return False, f"{dist} is not installed in {root} after installing the wheel"
    others = [f"{n} {v}" for n, v in versions.items() if n != dist and v is not None]
    if others:
        return False, f"another Triton is still installed next to it: {', '.join(others)}"
    label = git_label(version)
    if commit is not None and label is not None and not commit.lower().startswith(label):
        return False, (
            f"installed {dist} is {version}, whose +git{label} is not commit {commit[:12]}; "
            "the build did not come from the commit under test"
        )
    if normalize_version(version) != normalize_version(wheel_version):
        return False, (
            f"installed {dist} is {version}, but the wheel we installed is {wheel_version}; "
            "something else replaced it"
        )
    if installed_record is None:
        return False, f"cannot read the RECORD of the installed {dist} in {root}"
    have = parse_record(installed_record)
    differ = [p for p, h in wheel_files.items() if have.get(p) != h]
    if differ:
        return False, (
            f"installed {dist} {version} does not hold the wheel's files "
            f"({len(differ)} differ, e.g. {differ[0]}); reinstall or clean the env"
        )
    return True, f"{dist} {version}"


# Files that run code when any interpreter of the environment starts (site.py reads them):
# a wheel built from untrusted sources must not bring one in, or the next `python -c` the
# tool itself runs in that environment, outside any sandbox, would run it.
_STARTUP_HOOK = re.compile(r"^[^/]+\.pth$|^(sitecustomize|usercustomize)(\.py|/__init__\.py|\..*\.so)$")


def startup_hooks(wheel: Path) -> list[str]:
    """The files of `wheel` that Python would run at start-up once it is installed
    (top-level .pth files, sitecustomize, usercustomize), also those under its .data/purelib
    or .data/platlib; [] for a wheel without any. WheelUnreadable when it is not a wheel."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
    except (OSError, zipfile.BadZipFile) as exc:
        raise WheelUnreadable(f"{Path(wheel).name} is not a readable wheel: {exc}") from exc
    hooks = []
    for name in names:
        inner = re.sub(r"^[^/]+\.data/(purelib|platlib)/", "", name)
        if _STARTUP_HOOK.match(inner):
            hooks.append(name)
    return hooks
