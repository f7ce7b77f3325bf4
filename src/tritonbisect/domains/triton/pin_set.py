"""Every LLVM a Triton commit pins, and the NVIDIA toolchain, as one set.

Since late 2026 "the LLVM Triton pins" is several:

* the **core** pin, the LLVM libtriton links (`llvm_pin.read_pin`: cmake/llvm-info.json,
  else cmake/llvm-hash.txt). Its repository is the one cmake/llvm-build-info.json names
  (`"repository"`, e.g. triton-lang/llvm-project) when that file describes this very commit
  (the same `llvm_hash`: the build the prebuilt came from); otherwise llvm/llvm-project, and
  the build info describes the next LLVM being prepared.
* zero or more **backend** pins: cmake/<backend>-llvm-info.json (`llvm_hash`,
  `build_number`, `sha256sum`, and for AMD a `bootstrap_llvm` {`build_number`,
  `sha256sum`}: the LLVM SDK the codegen library is built with when no prebuilt library is
  published), the LLVM a backend's code generator is built against, a shared library loaded
  at run time. cmake/<backend>-llvm-build-info.json names its repository (ROCm/llvm-project
  for AMD); without one, or when it describes another commit, llvm/llvm-project.
* the **NVIDIA toolchain**: cmake/nvidia-toolchain-version.json (a version per tool:
  "ptxas", "ptxas-blackwell", "cuobjdump", "nvdisasm", "cudacrt", "cudart", "cupti"), or the
  older cmake/nvidia-toolchain-version.txt (one CUDA version for every tool).

A change of any of them is a bump of *that* one (`pin_set_changes`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tritonbisect.domains.triton.llvm_pin import (
    BUMP,
    FORMAT,
    NEXT_BUILD_FILE,
    PIN_FILES,
    PREBUILT,
    PinError,
    parse_info_json,
    read_pin,
)

CORE = "core"
BACKENDS = ("amd", "nvidia")
UPSTREAM = "llvm/llvm-project"
ADDED = "pin-added"  # a backend starts pinning an LLVM of its own (it shared the core one)
REMOVED = "pin-removed"  # ... and stops (back to the core LLVM)
TOOLCHAIN = "toolchain"  # the NVIDIA toolchain's versions change
TOOLCHAIN_JSON = "cmake/nvidia-toolchain-version.json"
TOOLCHAIN_TXT = "cmake/nvidia-toolchain-version.txt"
LABELS = {CORE: "core LLVM", "amd": "AMD LLVM", "nvidia": "NVIDIA LLVM"}

Reader = Callable[[str], "str | None"]


def info_file(backend: str) -> str:
    return f"cmake/{backend}-llvm-info.json"


def build_info_file(backend: str) -> str:
    return f"cmake/{backend}-llvm-build-info.json"


# every file a pin set is read from (what a commit must touch to change it)
PIN_SET_FILES = (
    *PIN_FILES, NEXT_BUILD_FILE, TOOLCHAIN_JSON, TOOLCHAIN_TXT,
    *(f for b in BACKENDS for f in (info_file(b), build_info_file(b))),
)


@dataclass(frozen=True)
class Pin:
    """One pinned LLVM: which (core or a backend), its repository, commit and build."""

    name: str
    commit: str
    build_number: int | None = None
    repository: str = UPSTREAM
    file: str = field(default="", compare=False)
    bootstrap_build: int | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        return LABELS.get(self.name, f"{self.name} LLVM")

    def key(self) -> str:
        return self.commit if self.build_number is None else f"{self.commit}-b{self.build_number}"

    def revision(self) -> str:
        """`<llvm_hash>-<build_number>`: what a backend's codegen library reports (and its
        cache key holds), TRITON_<BACKEND>_LLVM_REVISION at its build."""
        return f"{self.commit}-{self.build_number if self.build_number is not None else 1}"

    def describe(self) -> str:
        build = "" if self.build_number is None else f" build {self.build_number}"
        return f"{self.label} {self.repository}@{self.commit[:12]}{build}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "repository": self.repository, "commit": self.commit,
                "build_number": self.build_number, "file": self.file}


@dataclass(frozen=True)
class ToolchainPin:
    """The NVIDIA tools Triton bundles, by version."""

    versions: tuple[tuple[str, str], ...]
    file: str = field(default=TOOLCHAIN_JSON, compare=False)

    def version(self, tool: str) -> str | None:
        found = dict(self.versions)
        if self.file == TOOLCHAIN_TXT:
            return found.get("cuda")
        return found.get(tool)

    def describe(self) -> str:
        return ", ".join(f"{tool} {version}" for tool, version in self.versions)

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "versions": dict(self.versions)}


@dataclass(frozen=True)
class PinSet:
    pins: tuple[Pin, ...]  # the core first, then the backends by name
    toolchain: ToolchainPin | None = None

    @property
    def core(self) -> Pin:
        return self.pins[0]

    def get(self, name: str) -> Pin | None:
        return next((p for p in self.pins if p.name == name), None)

    @property
    def backends(self) -> tuple[Pin, ...]:
        return self.pins[1:]


@dataclass(frozen=True)
class PinSetChange:
    """What a commit does to one member of the set: kind is llvm_pin.BUMP, PREBUILT, FORMAT,
    ADDED, REMOVED or TOOLCHAIN."""

    name: str  # core, amd, nvidia, toolchain
    kind: str
    old: Pin | None = None
    new: Pin | None = None
    old_toolchain: ToolchainPin | None = None
    new_toolchain: ToolchainPin | None = None

    @property
    def label(self) -> str:
        return "NVIDIA toolchain" if self.name == TOOLCHAIN else LABELS.get(self.name, f"{self.name} LLVM")

    def describe(self) -> str:
        if self.kind == TOOLCHAIN:
            a = dict(self.old_toolchain.versions) if self.old_toolchain else {}
            b = dict(self.new_toolchain.versions) if self.new_toolchain else {}
            moved = [f"{tool} {a.get(tool, 'none')} -> {b.get(tool, 'none')}"
                     for tool in sorted(set(a) | set(b)) if a.get(tool) != b.get(tool)]
            where = self.new_toolchain.file if self.new_toolchain else TOOLCHAIN_JSON
            return f"moves the NVIDIA toolchain ({where}): {', '.join(moved) or 'same versions, other file'}"
        if self.kind == ADDED and self.new is not None:
            return (f"pins an LLVM of its own for the {self.name.upper()} backend: {self.new.describe()} "
                    f"({self.new.file}; before, the backend used the core LLVM)")
        if self.kind == REMOVED and self.old is not None:
            return f"drops the {self.label} pin ({self.old.describe()}): the backend uses the core LLVM again"
        assert self.old is not None and self.new is not None
        if self.kind == BUMP:
            repo = (self.new.repository if self.new.repository == self.old.repository
                    else f"{self.old.repository} -> {self.new.repository}")
            return (f"bumps the {self.label} ({repo}) from {self.old.commit[:12]} to "
                    f"{self.new.commit[:12]}")
        if self.kind == PREBUILT:
            return (f"changes only the {self.label} prebuilt's build number ({self.old.build_number} -> "
                    f"{self.new.build_number}) for the same commit {self.new.commit[:12]}: not an LLVM bump")
        return f"moves the {self.label} pin from {self.old.file} to {self.new.file} (same LLVM)"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pin": self.name, "kind": self.kind, "describe": self.describe()}
        if self.kind == TOOLCHAIN:
            out["old"] = self.old_toolchain.to_dict() if self.old_toolchain else None
            out["new"] = self.new_toolchain.to_dict() if self.new_toolchain else None
        else:
            out["old"] = self.old.to_dict() if self.old else None
            out["new"] = self.new.to_dict() if self.new else None
        return out


def _build_repository(read: Reader, path: str, commit: str) -> tuple[str | None, bool]:
    """The repository a build-info file names, and whether it describes `commit`."""
    text = read(path)
    if text is None:
        return None, False
    try:
        data = json.loads(text)
    except ValueError:
        raise PinError(f"{path} is not valid JSON: fix the file") from None
    if not isinstance(data, dict):
        raise PinError(f"{path} is not a JSON object: fix the file")
    repo = data.get("repository")
    same = str(data.get("llvm_hash") or "").strip().lower() == commit.lower()
    return (str(repo) if isinstance(repo, str) and repo.strip() else UPSTREAM), same


def _backend_pin(read: Reader, backend: str) -> Pin | None:
    path = info_file(backend)
    text = read(path)
    if text is None:
        return None
    commit, build, _digests, data = parse_info_json(path, text)
    repo, _same = _build_repository(read, build_info_file(backend), commit)
    boot = data.get("bootstrap_llvm") if isinstance(data.get("bootstrap_llvm"), dict) else {}
    boot_build = boot.get("build_number") if isinstance(boot, dict) else None
    return Pin(backend, commit, build, repo if repo is not None else UPSTREAM, path,
               int(boot_build) if isinstance(boot_build, int) else None)


def read_toolchain(read: Reader) -> ToolchainPin | None:
    text = read(TOOLCHAIN_JSON)
    if text is not None:
        try:
            data = json.loads(text)
        except ValueError:
            raise PinError(f"{TOOLCHAIN_JSON} is not valid JSON: fix the file") from None
        if not isinstance(data, dict):
            raise PinError(f"{TOOLCHAIN_JSON} is not a JSON object of tool versions")
        return ToolchainPin(tuple(sorted((str(k), str(v)) for k, v in data.items())), TOOLCHAIN_JSON)
    text = read(TOOLCHAIN_TXT)
    if text is not None and text.split():
        return ToolchainPin((("cuda", text.split()[0]),), TOOLCHAIN_TXT)
    return None


def read_pin_set(read: Reader) -> PinSet | None:
    """The set from `read(path)` (a History's file_at, or llvm_pin.tree_reader); None when
    there is no core pin. PinError (one line) for a file that exists but cannot be read."""
    core = read_pin(read)
    if core is None:
        return None
    repo, same = _build_repository(read, NEXT_BUILD_FILE, core.hash)
    pins = [Pin(CORE, core.hash, core.build_number, repo if same and repo else UPSTREAM, core.file)]
    pins += [p for p in (_backend_pin(read, b) for b in BACKENDS) if p is not None]
    return PinSet(tuple(pins), read_toolchain(read))


def pin_set_changes(old: PinSet, new: PinSet) -> list[PinSetChange]:
    """Every member that changed from `old` to `new`: the core first, then the backends,
    then the toolchain."""
    out: list[PinSetChange] = []
    for name in dict.fromkeys([p.name for p in old.pins] + [p.name for p in new.pins]):
        a, b = old.get(name), new.get(name)
        if a is None and b is not None:
            out.append(PinSetChange(name, ADDED, None, b))
        elif b is None and a is not None:
            out.append(PinSetChange(name, REMOVED, a, None))
        elif a is not None and b is not None:
            if a.commit.lower() != b.commit.lower():
                out.append(PinSetChange(name, BUMP, a, b))
            elif a.build_number != b.build_number and None not in (a.build_number, b.build_number):
                out.append(PinSetChange(name, PREBUILT, a, b))
            elif a.file != b.file:
                out.append(PinSetChange(name, FORMAT, a, b))
    if old.toolchain != new.toolchain and (old.toolchain or new.toolchain):
        out.append(PinSetChange(TOOLCHAIN, TOOLCHAIN, old_toolchain=old.toolchain,
                                new_toolchain=new.toolchain))
    return out


__all__ = [
    "ADDED", "BACKENDS", "CORE", "PIN_SET_FILES", "REMOVED", "TOOLCHAIN", "TOOLCHAIN_JSON",
    "TOOLCHAIN_TXT", "UPSTREAM", "Pin", "PinSet", "PinSetChange", "ToolchainPin",
    "build_info_file", "info_file", "pin_set_changes", "read_pin_set", "read_toolchain",
]
