"""The LLVM a Triton commit pins, in every format Triton has used.

Two eras:

* `cmake/llvm-hash.txt`: one line, the llvm-project commit. The prebuilt LLVM that
  Triton's setup.py downloads is named `llvm-<hash[:8]>-<platform>`.
* `cmake/llvm-info.json` (2026 on): `{"llvm_hash", "build_number", "sha256sum": {platform:
  digest}}`. The prebuilt is `llvm-<hash[:8]>-<platform>-<build_number>`. A change of
  `build_number` alone swaps the prebuilt (rebuilt, same llvm-project commit): it is not an
  LLVM bump, and there is nothing to bisect in llvm-project for it.

`cmake/llvm-build-info.json` names the repository an LLVM build comes from (a fork:
triton-lang/llvm-project) and is updated first to produce the next prebuilt: it is never
read as the pin (pin_set.py reads its repository when it describes the pinned commit).

Everything in the tool that needs the pin reads it through `read_pin` (from any source of
file text: a commit in a History, a checked-out tree), so that ranges that cross the switch
from one file to the other see one continuous pin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HASH_FILE = "cmake/llvm-hash.txt"
INFO_FILE = "cmake/llvm-info.json"
NEXT_BUILD_FILE = "cmake/llvm-build-info.json"  # the LLVM being prepared: never the pin
PIN_FILES = (INFO_FILE, HASH_FILE)  # read in this order: the newer format wins
PIN_FILES_TEXT = f"{INFO_FILE} or {HASH_FILE}"

_HASH = re.compile(r"^[0-9a-fA-F]{7,40}$")

# what a commit does to the pin (pin_change)
BUMP = "llvm-bump"  # the llvm-project commit changes: bisectable in llvm-project
PREBUILT = "prebuilt-rebuild"  # only build_number: another prebuilt of the same commit
FORMAT = "format-switch"  # same commit and build, written in the other file


class PinError(ValueError):
    """A pin file that exists but cannot be read (one line, with the file and the fix)."""


@dataclass(frozen=True)
class LLVMPin:
    hash: str
    build_number: int | None = None
    sha256: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    file: str = field(default=HASH_FILE, compare=False)

    def prebuilt_name(self, platform: str) -> str:
        """The name of the prebuilt LLVM Triton's setup.py downloads for this pin."""
        name = f"llvm-{self.hash[:8]}-{platform}"
        return name if self.build_number is None else f"{name}-{self.build_number}"

    def key(self) -> str:
        """What identifies the prebuilt: the commit and, in the JSON era, the build number."""
        return self.hash if self.build_number is None else f"{self.hash}-b{self.build_number}"

    def digest(self, platform: str) -> str | None:
        return dict(self.sha256).get(platform)

    def describe(self) -> str:
        build = "" if self.build_number is None else f" build {self.build_number}"
        return f"LLVM {self.hash[:12]}{build} ({self.file})"


def parse_pin(path: str, text: str) -> LLVMPin:
    """The pin written in `path` (HASH_FILE or INFO_FILE); PinError when unreadable."""
    if path == HASH_FILE:
        words = text.split()
        if not words or not _HASH.match(words[0]):
            raise PinError(f"{HASH_FILE} holds no LLVM commit hash: write the llvm-project commit in it")
        return LLVMPin(words[0], file=HASH_FILE)
    if path != INFO_FILE:
        raise PinError(f"{path} is not an LLVM pin file (use {PIN_FILES_TEXT})")
    commit, build, digests, _data = parse_info_json(INFO_FILE, text)
    return LLVMPin(commit, build, digests, INFO_FILE)


def parse_info_json(path: str, text: str) -> tuple[str, int | None, tuple[tuple[str, str], ...], dict]:
    """An llvm-info.json-shaped file (the core's, or a backend's <backend>-llvm-info.json):
    its commit, build number, prebuilt digests and the whole object; PinError when unreadable."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PinError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}): fix the file") from None
    value = data.get("llvm_hash") if isinstance(data, dict) else None
    if not isinstance(value, str) or not _HASH.match(value.strip()):
        raise PinError(f'{path} has no "llvm_hash" commit: add the llvm-project commit as "llvm_hash"')
    build = data.get("build_number")
    if build is not None:
        try:
            build = int(build)
        except (TypeError, ValueError):
            raise PinError(f'{path}: "build_number" {build!r} is not a number') from None
    sums = data.get("sha256sum") or {}
    digests = tuple(sorted((str(k), str(v)) for k, v in sums.items())) if isinstance(sums, dict) else ()
    return value.strip(), build, digests, data


def read_pin(read: Callable[[str], str | None]) -> LLVMPin | None:
    """The pin from the first pin file `read(path)` returns text for; None when neither is
    there. `read` gives a file's text or None (History.file_at, tree_reader)."""
    for path in PIN_FILES:
        text = read(path)
        if text is not None:
            return parse_pin(path, text)
    return None


def require_pin(read: Callable[[str], str | None], where: str) -> LLVMPin:
    """read_pin, with one-line InputErrors naming `where` (e.g. "at 1a2b3c in ~/triton")
    when the pin is unreadable or missing."""
    from tritonbisect.core.errors import InputError

    try:
        pin = read_pin(read)
    except PinError as exc:
        raise InputError(f"{exc} ({where})") from None
    if pin is None:
        raise InputError(f"the LLVM pin ({PIN_FILES_TEXT}) is missing {where}: "
                         "not a Triton checkout that pins LLVM")
    return pin


def tree_reader(tree: Path) -> Callable[[str], str | None]:
    """read() for a checked-out tree."""

    def read(path: str) -> str | None:
        try:
            return (Path(tree) / path).read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    return read


def pin_change(old: LLVMPin, new: LLVMPin) -> str | None:
    """BUMP, PREBUILT, FORMAT, or None when nothing that matters changed."""
    if old.hash.lower() != new.hash.lower():
        return BUMP
    if old.build_number != new.build_number and old.build_number is not None and new.build_number is not None:
        return PREBUILT
    if old.file != new.file:
        return FORMAT
    return None


def pin_text(path: str, current: str | None, llvm_hash: str) -> str:
    """The text of pin file `path` pinning `llvm_hash`, in the file's own format.

    For INFO_FILE the other fields are kept except the prebuilt digests, which describe
    another commit's prebuilt (a locally built LLVM has none)."""
    if path == HASH_FILE:
        return llvm_hash + "\n"
    data: dict = {}
    if current:
        try:
            loaded = json.loads(current)
            data = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            data = {}
    old = data.get("llvm_hash")
    data["llvm_hash"] = llvm_hash
    data.setdefault("build_number", 1)
    if old != llvm_hash:
        data["sha256sum"] = {}
    return json.dumps(data, indent=2) + "\n"


def write_pin(tree: Path, llvm_hash: str) -> str | None:
    """Pin `llvm_hash` in the tree's own pin file (the era's format); the path written, or
    None when the tree has no pin file (nothing is invented)."""
    read = tree_reader(tree)
    for path in PIN_FILES:
        current = read(path)
        if current is not None:
            new = pin_text(path, current, llvm_hash)
            if new != current:
                (Path(tree) / path).write_text(new, encoding="utf-8")
            return path
    return None


__all__ = [
    "BUMP", "FORMAT", "HASH_FILE", "INFO_FILE", "NEXT_BUILD_FILE", "PIN_FILES", "PIN_FILES_TEXT",
    "PREBUILT", "LLVMPin", "PinError", "parse_info_json", "parse_pin", "pin_change", "pin_text", "read_pin",
    "tree_reader", "write_pin",
]
