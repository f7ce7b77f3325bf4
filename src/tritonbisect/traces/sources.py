"""Tell by content what a path given as a trace is, and read the artifacts that are not
tritonparse traces: what PyTorch and Triton write while a user debugs.

| what | recognised by | read by |
| --- | --- | --- |
| Inductor output code (`output_code.py`, a wrapper in Inductor's cache) | `async_compile.triton(` in a Python file | inductor_trace |
| TORCH_COMPILE_DEBUG folder | `…/torchinductor/<graph>/output_code.py` below it | inductor_trace, one graph per folder |
| TORCH_TRACE folder or log | structured-trace records (`V… file.py:N] {json}`) | torch_trace |
| TRITON_KERNEL_DUMP / cache folder, one kernel's folder | folders of `.ttir`/`.ttgir`/`.llir`/`.ptx` files | ir_artifacts |
| TRITON_REPRODUCER_PATH file or folder | `{-# external_resources: {mlir_reproducer: …` | ir_artifacts |
| a minifier's `repro.py` / `minifier_launcher.py` | `run_repro(` of `torch._dynamo.repro` | not a trace: a `--test` (oracles.minifier_test) |

Anything else is left to the tritonparse reader. A folder holding several kinds is read as the
first of: tritonparse files, output code, TORCH_TRACE, kernel dump, reproducers; `notes` names the others.
"""

from __future__ import annotations

import os
from pathlib import Path

from tritonbisect.core.errors import InputError
from tritonbisect.traces import ir_artifacts, torch_trace
from tritonbisect.traces.inductor_code import looks_like_output_code
from tritonbisect.traces.inductor_trace import Graph, graph_tag, inductor_trace

HEAD_BYTES = 1 << 20
MAX_CODE_BYTES = 64 << 20
MINIFIER_MARKERS = ("run_repro(", "torch._dynamo.repro")
_TRITONPARSE_SUFFIXES = (".ndjson", ".ndjson.gz", ".ndjson.zst", ".ndjson.zstd", ".bin.ndjson")
_WALK_LIMIT = 20000


def _head(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def is_minifier_script(path: Path) -> bool:
    """A minifier's repro.py or minifier_launcher.py (TORCHDYNAMO_REPRO_AFTER)."""
    if not path.is_file() or path.suffix != ".py":
        return False
    head = _head(path)
    return all(m in head for m in MINIFIER_MARKERS) and "async_compile.triton(" not in head


def _read_code(path: Path) -> str:
    if path.is_symlink():
        raise InputError(f"{path}: a symbolic link; give the file it points to")
    size = path.stat().st_size
    if size > MAX_CODE_BYTES:
        raise InputError(f"{path}: {size >> 20} MiB, more than the {MAX_CODE_BYTES >> 20} MiB of output code this reader takes")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


def _walk(root: Path, max_depth: int = 8) -> list[Path]:
    """Files under root, symlinks not followed, depth and count bounded."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if len(Path(dirpath).relative_to(root).parts) >= max_depth:
            dirnames[:] = []
        dirnames.sort()
        for name in sorted(filenames):
            out.append(Path(dirpath) / name)
            if len(out) >= _WALK_LIMIT:
                return out
    return out


def debug_graphs(root: Path, files: list[Path]) -> list[Graph]:
    """The graphs of a TORCH_COMPILE_DEBUG folder: each `torchinductor/<graph>/output_code.py`."""
    graphs = []
    codes = [p for p in files if p.name == "output_code.py" and not p.is_symlink()]
    runs = {next((part for part in p.relative_to(root).parts if part.startswith("run_")), None) for p in codes}
    for path in codes:
        rel = path.relative_to(root)
        label = path.parent.name if path.parent != root else ""
        run = next((p for p in rel.parts if p.startswith("run_")), None)
        if run and len(runs) > 1:  # two runs' graphs of one name stay apart by their run
            label = f"{run[:24]}/{label}" if label else run[:24]
        graphs.append(Graph(label=label, tag=graph_tag(label.split("/")[-1]), path=path, text=_read_code(path)))
    return graphs


def _kinds_in(root: Path) -> tuple[dict[str, list[Path]], list[Path]]:
    files = _walk(root)
    kinds: dict[str, list[Path]] = {}
    for path in files:
        name = path.name
        if name.endswith(_TRITONPARSE_SUFFIXES):
            kinds.setdefault("tritonparse", []).append(path)
        elif name == "output_code.py":
            kinds.setdefault("output code", []).append(path)
        elif name.endswith(ir_artifacts.REPRO_SUFFIX):
            kinds.setdefault("reproducer", []).append(path)
        elif path.suffix in ir_artifacts.KERNEL_SUFFIXES:
            kinds.setdefault("kernel dump", []).append(path)
        elif (name.startswith("dedicated_log_torch_trace") or path.suffix == ".log") and \
                torch_trace.looks_like_torch_trace(path):
            kinds.setdefault("TORCH_TRACE", []).append(path)
    return kinds, files


def load_artifact(path: Path) -> object | None:
    """The Trace of a non-tritonparse artifact at path, or None when path is something else
    (a tritonparse trace, or nothing the readers know: the tritonparse reader says why). Typed
    `object`: the reader, which calls this, owns the Trace class and this module cannot import it."""
    if not path.exists():
        return None
    if path.is_file():
        name = path.name
        if name.endswith(_TRITONPARSE_SUFFIXES):
            return None
        head = _head(path)
        if "mlir_reproducer" in head and ir_artifacts.is_reproducer(_read_code(path)):
            return ir_artifacts.reproducer_trace(path)
        if path.suffix == ".py" and looks_like_output_code(head):
            return inductor_trace(path, [Graph(label="", tag="g", path=path, text=_read_code(path))], "output code")
        if is_minifier_script(path):
            raise InputError(f"{path} is a minifier's repro script, not a trace: bisect with it as the test "
                             f"(`tritonbisect repro {path} --out DIR` writes one that tells its outcomes apart)")
        if torch_trace.looks_like_torch_trace(path):
            return torch_trace.torch_trace(path)
        if path.suffix in ir_artifacts.KERNEL_SUFFIXES and ir_artifacts.is_kernel_folder(path.parent):
            return ir_artifacts.dump_trace(path.parent)
        return None
    kinds, _files = _kinds_in(path)
    if "tritonparse" in kinds:
        return None
    order = ("output code", "TORCH_TRACE", "kernel dump", "reproducer")
    present = [k for k in order if k in kinds]
    if not present:
        return None
    others = [f"{k} ({len(kinds[k])} file{'s' if len(kinds[k]) != 1 else ''})" for k in present[1:]]
    note = [f"this folder also holds {', '.join(others)}: pass that folder itself to read it"] if others else []
    chosen = present[0]
    if chosen == "output code":
        graphs = debug_graphs(path, kinds["output code"])
        trace = inductor_trace(path, graphs, "TORCH_COMPILE_DEBUG", notes=[
            f"TORCH_COMPILE_DEBUG folder: {len(graphs)} graph{'s' if len(graphs) != 1 else ''} (output_code.py)", *note])
    elif chosen == "TORCH_TRACE":
        folders = sorted({p.parent for p in kinds["TORCH_TRACE"]})
        trace = torch_trace.torch_trace(folders[0] if len(folders) == 1 else kinds["TORCH_TRACE"][0])
        trace.notes.extend(note)
    elif chosen == "kernel dump":
        roots = sorted({p.parent for p in kinds["kernel dump"]})
        common = Path(os.path.commonpath([str(r) for r in roots]))
        trace = ir_artifacts.dump_trace(common if common.is_relative_to(path) else path)
        trace.notes.extend(note)
    else:
        folders = sorted({p.parent for p in kinds["reproducer"]})
        trace = ir_artifacts.reproducer_trace(folders[0])
        trace.notes.extend(note)
    return trace
