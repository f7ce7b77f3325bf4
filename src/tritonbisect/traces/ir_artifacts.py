"""IR that Triton wrote while compiling, as a Trace of compilations with no Python source.

- a TRITON_KERNEL_DUMP folder (or TRITON_CACHE_DIR, the same layout), or one kernel's folder in it:
  `<hash>/<name>.ttir|.ttgir|.llir|.ptx|.cubin|…`, a cache folder also `<name>.json` (the whole
  compile metadata). Without the json the options come from the TTGIR's module attributes
  (num-warps, num-ctas, threads-per-warp, target) or the PTX's `.target sm_NN`.
- a TRITON_REPRODUCER_PATH reproducer (`<prefix>.make_ttir|make_ttgir|make_llir.repro.mlir`, or a
  folder of them): the module a stage's pass pipeline started from, and that pipeline in the
  file's `{-# external_resources: {mlir_reproducer: {pipeline: ...}} #-}`. The module is TTIR for
  make_ttir and make_ttgir, TTGIR for make_llir; the options come from the pipeline's passes,
  and from the sibling reproducers of the same prefix where this one has none (make_ttir's).

The oracles compile the recorded IR (the IR oracle); `repro` picks the TTGIR where a kernel has it.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.mlir.module_facts import (
    module_options,
    pipeline_options,
    ptx_arch,
    split_reproducer,
)
from tritonbisect.mlir.signature import kernel_function
from tritonbisect.traces.reader import Compilation, Trace, TraceFile

KERNEL_SUFFIXES = (".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn", ".cubin", ".hsaco")
STAGES = ("ttir", "ttgir")
MAX_IR_BYTES = 64 << 20
REPRO_SUFFIX = ".repro.mlir"
_ANCHOR = re.compile(r"\.(make_\w+)\.repro\.mlir$")


def _read(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        raise InputError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > MAX_IR_BYTES:
        raise InputError(f"{path}: {size >> 20} MiB of IR, more than the {MAX_IR_BYTES >> 20} MiB this reader takes")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


def is_kernel_folder(folder: Path) -> bool:
    try:
        return any(p.suffix in KERNEL_SUFFIXES and p.is_file() and not p.is_symlink() for p in folder.iterdir())
    except OSError:
        return False


def kernel_folders(root: Path, limit: int = 5000) -> list[Path]:
    """The kernel folders at or under root (two levels at most), symlinks not followed."""
    if is_kernel_folder(root):
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, _files in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        if depth >= 2:
            dirnames[:] = []
        here = Path(dirpath)
        if here != root and is_kernel_folder(here):
            found.append(here)
            dirnames[:] = []
        if len(found) >= limit:
            break
    return sorted(found)


def _target_text(target: Any) -> str | None:
    if isinstance(target, dict) and target.get("backend"):
        return f"{target['backend']}:{target.get('arch')}"
    return target if isinstance(target, str) and ":" in target else None


def _as_target(text: str | None, warp: Any = None) -> dict[str, Any] | None:
    if not text or ":" not in text:
        return None
    backend, arch = text.split(":", 1)
    if backend not in ("cuda", "hip"):
        return None
    return {"backend": backend, "arch": int(arch) if arch.isdigit() else arch,
            "warp_size": int(warp) if isinstance(warp, int) else (32 if backend == "cuda" else 64)}


def _dumped(folder: Path) -> tuple[str, dict[str, str], dict[str, Any], list[str]]:
    """(kernel name, IR texts by stage, metadata, notes) of one kernel folder."""
    files = {p.suffix: p for p in folder.iterdir() if p.is_file() and not p.is_symlink()}
    stems = Counter(p.stem for p in folder.iterdir() if p.suffix in KERNEL_SUFFIXES)
    name = stems.most_common(1)[0][0]
    ir = {s: _read(files["." + s]) for s in STAGES if "." + s in files}
    notes: list[str] = []
    meta: dict[str, Any] = {}
    json_path = folder / f"{name}.json"
    if json_path.is_file() and not json_path.is_symlink():
        try:
            loaded = json.loads(_read(json_path))
            meta = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            notes.append(f"{json_path.name} is not JSON: options read from the IR instead")
    if not meta:
        facts = module_options(ir.get("ttgir", ""))
        target = _target_text(facts.get("target"))
        if target is None and ".ptx" in files:
            arch = ptx_arch(_read(files[".ptx"]))
            target = f"cuda:{arch}" if arch else None
        meta = {k: facts[k] for k in ("num_warps", "num_ctas") if k in facts}
        if target:
            meta["target"] = _as_target(target, facts.get("warp_size"))
        if "ttir" in ir:
            notes.append("no metadata json beside the IR: num_stages is not known, so a TTIR oracle (--from ttir) "
                         "compiles with Triton's default")
    meta.setdefault("name", name)
    return name, ir, meta, notes


def dump_trace(root: Path) -> Trace:
    """A TRITON_KERNEL_DUMP (or cache) folder, or one kernel's folder, as a Trace."""
    folders = kernel_folders(root)
    if not folders:
        raise InputError(f"{root}: no kernel folder (with .ttir/.ttgir/.llir/.ptx files) in it")
    entries = [(folder, *_dumped(folder)) for folder in folders]
    uses = Counter(e[1] for e in entries)
    compilations: dict[str, Compilation] = {}
    kernel_notes: dict[str, list[str]] = {}
    files: list[TraceFile] = []
    for folder, name, ir, meta, notes in entries:
        key = name if uses[name] == 1 else f"{name}__{folder.name[:8].lower()}"
        stage_files = sorted(p.name for p in folder.iterdir() if p.suffix in KERNEL_SUFFIXES)
        comp_hash = folder.name if folder.name not in compilations else f"{folder.name}:{name}"
        compilations[comp_hash] = Compilation(hash=comp_hash, name=key, metadata={**meta, "name": key}, python_source=None,
                                              file=folder, line=0, ttir=ir.get("ttir"), ir=ir)
        kernel_notes[key] = [f"folder {folder}: {', '.join(stage_files)}", *notes]
        if key != name:
            kernel_notes[key].append(f"Triton kernel {name} (compiled {uses[name]} times in this dump, one folder each)")
        if not ir:
            kernel_notes[key].append("no TTIR or TTGIR in this folder: no IR oracle can be made from it")
        files.append(TraceFile(path=folder, records=len(stage_files)))
    return Trace(root=root, files=files, compilations=compilations, launches=[], skipped=Counter(), ignored=Counter(),
                 kind="kernel dump", kernel_notes=kernel_notes, ir_only=True,
                 notes=[f"{len(folders)} kernel folder{'s' if len(folders) != 1 else ''} (TRITON_KERNEL_DUMP or cache "
                        "layout): IR oracles compile their TTGIR (or --from ttir)"])


def is_reproducer(text: str) -> bool:
    return split_reproducer(text)[1] is not None


def _reproducer(path: Path, siblings: dict[str, str]) -> tuple[str, str, dict[str, Any], list[str]]:
    """(kernel function, the IR stage, metadata, notes) of one reproducer file."""
    module, pipeline = split_reproducer(_read(path))
    if pipeline is None:
        raise InputError(f"{path}: no mlir_reproducer pipeline in its external resources; not a TRITON_REPRODUCER_PATH "
                         "file")
    facts = module_options(module)
    stage = "ttgir" if "num_warps" in facts else "ttir"
    options: dict[str, Any] = {**pipeline_options(pipeline)}
    for key, value in facts.items():
        options.setdefault(key, value)
    notes = [f"pipeline: {len(pipeline.split(','))} passes from {path.name}"]
    anchor = _ANCHOR.search(path.name)
    first = anchor.group(1) == "make_ttir" if anchor else "tt.call" in module or "inline" in pipeline.split(",")[0]
    if first:
        notes.append("the module is the frontend's TTIR, before make_ttir: the IR oracle runs make_ttir on it, then "
                     "compiles on from make_ttgir")
    if "target" not in options:
        for other in siblings.values():
            _, other_pipe = split_reproducer(other)
            more = pipeline_options(other_pipe or "")
            for key in ("target", "num_warps", "num_ctas", "num_stages", "warp_size"):
                if key in more and key not in options:
                    options[key] = more[key]
        if "target" in options:
            notes.append("options from the sibling reproducers of the same prefix")
    meta: dict[str, Any] = {k: options[k] for k in ("num_warps", "num_ctas", "num_stages") if k in options}
    if first and stage == "ttir":
        meta["ir_first_stage"] = "ttir"
    target = _as_target(str(options["target"]), options.get("warp_size")) if "target" in options else None
    if target:
        meta["target"] = target
    return kernel_function(module) or path.name.split(".")[0], stage, {"ir": module, **meta}, notes


def reproducer_trace(root: Path) -> Trace:
    """One TRITON_REPRODUCER_PATH file, or a folder of them, as a Trace."""
    paths = [root] if root.is_file() else sorted(p for p in root.iterdir()
                                                 if p.name.endswith(REPRO_SUFFIX) and p.is_file() and not p.is_symlink())
    if not paths:
        raise InputError(f"{root}: no MLIR reproducer (*.repro.mlir) in it")
    entries = []
    for path in paths:
        prefix = _ANCHOR.split(path.name)[0] if _ANCHOR.search(path.name) else None
        siblings: dict[str, str] = {}
        if prefix is not None:
            for other in sorted(path.parent.glob(f"{prefix}.make_*{REPRO_SUFFIX}")):
                if other != path and other.is_file() and not other.is_symlink():
                    siblings[other.name] = _read(other)
        entries.append((path, *_reproducer(path, siblings)))
    uses = Counter(e[1] for e in entries)
    compilations: dict[str, Compilation] = {}
    kernel_notes: dict[str, list[str]] = {}
    for path, function, stage, meta, notes in entries:
        anchor = _ANCHOR.search(path.name)
        key = function if uses[function] == 1 else f"{function}__{anchor.group(1) if anchor else stage}"
        ir = {stage: meta.pop("ir")}
        compilations[str(path)] = Compilation(hash=str(path), name=key, metadata={**meta, "name": key},
                                              python_source=None, file=path, line=1, ttir=ir.get("ttir"), ir=ir)
        kernel_notes[key] = [f"{path.name}: the {stage.upper()} a stage started from", *notes]
    return Trace(root=root, files=[TraceFile(path=p, records=1) for p in paths], compilations=compilations,
                 launches=[], skipped=Counter(), ignored=Counter(), kind="MLIR reproducer", ir_only=True,
                 kernel_notes=kernel_notes,
                 notes=["TRITON_REPRODUCER_PATH reproducer: the IR oracle compiles the module from the stage it was "
                        "written at"])
