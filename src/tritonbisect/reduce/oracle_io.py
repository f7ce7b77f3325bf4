"""An oracle folder as the reducer sees it: the kernel source (or, for an IR oracle, its TTIR or
TTGIR) and the launch or compile context, and how a candidate (a changed source and context) is
written back as a runnable oracle."""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonbisect.core import pyast
from tritonbisect.core.errors import InputError
from tritonbisect.mlir.signature import kernel_function
from tritonbisect.oracles.kinds import OracleKind, compiles

RUNTIME_SCRIPT = "repro.py"
CONTEXT = "context.json"
COMPILE_SCRIPT = "compile_repro.py"
COMPILE_CONTEXT = "compile_context.json"
COMPILE_SOURCE = "kernel_source.py"
IR_SUFFIXES = (".ttir", ".ttgir")
OTHER_KINDS = {"replay.py": "replay oracle"}


@dataclass(frozen=True)
class Candidate:
    source: str
    context: dict[str, Any]

    def key(self) -> str:
        text = self.source + "\0" + json.dumps(self.context, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass
class OracleDir:
    root: Path
    script_text: str  # runtime: repro.py, which embeds the source; compile and IR: unused
    kernel: str
    original: Candidate
    kind: OracleKind = OracleKind.RUNTIME  # COMPILE (Python source), or IR (a compile oracle of a TTIR/TTGIR file)
    ir_file: str = ""  # an IR oracle's IR file, beside its script

    @property
    def compiles(self) -> bool:
        """A compile oracle (of a source or of IR): no launch, codegen statistics."""
        return compiles(self.kind)

    @property
    def script_name(self) -> str:
        return COMPILE_SCRIPT if self.compiles else RUNTIME_SCRIPT

    @property
    def stage(self) -> str:
        """An IR oracle's stage (ttir, ttgir); "" for the others."""
        return self.ir_file.rsplit(".", 1)[-1] if self.ir_file else ""


def _source_assignment(tree: ast.Module) -> ast.Assign | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNEL_SOURCE" for t in node.targets):
            return node
    return None


def _load_compile(root: Path) -> OracleDir:
    try:
        context = json.loads((root / COMPILE_CONTEXT).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{root}: cannot read the compile oracle: {exc}") from None
    job = context.get("job") if isinstance(context, dict) else None
    what = job.get("what") if isinstance(job, dict) else None
    if not isinstance(what, dict):
        raise InputError(f"{root / COMPILE_CONTEXT}: no job in it; regenerate the oracle with `tritonbisect repro`")
    if what.get("kind") == "ir":
        return _load_ir(root, context, str(what.get("file") or ""))
    if what.get("kind") != "python" or what.get("file") != COMPILE_SOURCE:
        raise InputError(f"{root}: a compile oracle of {what.get('file') or 'no file'}; expected {COMPILE_SOURCE} "
                         "or a .ttir/.ttgir file")
    try:
        source = (root / COMPILE_SOURCE).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{root}: cannot read the compile oracle: {exc}") from None
    return OracleDir(root, "", str(what.get("kernel") or context.get("kernel") or ""), Candidate(source, context), OracleKind.COMPILE)


def _load_ir(root: Path, context: dict[str, Any], name: str) -> OracleDir:
    path = root / name
    if Path(name).name != name or name.startswith(".") or path.suffix not in IR_SUFFIXES:
        raise InputError(f"{root}: an IR oracle of {name}; reduce handles a .ttir or .ttgir file beside {COMPILE_SCRIPT}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{root}: cannot read the IR oracle's {name}: {exc}") from None
    kernel = str(context.get("kernel") or kernel_function(text) or path.stem)
    return OracleDir(root, "", kernel, Candidate(text, context), OracleKind.IR, ir_file=name)


def load(root: Path) -> OracleDir:
    """The runtime, compile or IR oracle in `root`; InputError (one line) for anything else."""
    if (root / COMPILE_SCRIPT).is_file():
        return _load_compile(root)
    script = root / RUNTIME_SCRIPT
    if not script.is_file():
        other = [kind for name, kind in OTHER_KINDS.items() if (root / name).is_file()]
        if other:
            raise InputError(f"{root}: a {other[0]}; reduce handles runtime oracles (repro.py) for now")
        raise InputError(f"{root}: no {RUNTIME_SCRIPT} there; give a folder written by `tritonbisect repro`")
    text = script.read_text(encoding="utf-8")
    try:
        context = json.loads((root / CONTEXT).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{root}: cannot read {CONTEXT}: {exc}") from None
    if not isinstance(context, dict):
        raise InputError(f"{root}: {CONTEXT} is not an object; regenerate the oracle with `tritonbisect repro`")
    if context.get("ir"):
        raise InputError(f"{root}: a runtime IR oracle (it needs a GPU); reduce its compile-mode IR oracle "
                         "(`repro --from ttir|ttgir`, or `repro --ir FILE`)")
    node = _source_assignment(pyast.parse(text))
    if node is None or not isinstance(node.value, ast.Constant) or not isinstance(node.value.value, str):
        raise InputError(f"{root / RUNTIME_SCRIPT}: no KERNEL_SOURCE string in it; regenerate it with `tritonbisect repro`")
    named = context.get("kernel")
    kernel = str(named.get("name") or "") if isinstance(named, dict) else ""
    return OracleDir(root, text, kernel, Candidate(node.value.value.lstrip("\n"), absolute_blobs(context, root)))


def _blob_fields(context: dict[str, Any]) -> list[dict[str, Any]]:
    return [spec["init"] for spec in context.get("args", []) if isinstance(spec.get("init"), dict) and spec["init"].get("file")]


def _check_args(context: Any, where: Path) -> None:
    """The argument specs of a runtime oracle's context.json are objects, their blobs file names."""
    args = context.get("args") if isinstance(context, dict) else None
    if not isinstance(args, list) or not all(isinstance(spec, dict) for spec in args):
        raise InputError(f"{where}: its args are not a list of objects; regenerate the oracle with `tritonbisect repro`")
    for spec in args:
        for part in (spec.get("init"), spec.get("after")):
            if part is not None and not (isinstance(part, dict) and isinstance(part.get("file", ""), str)):
                raise InputError(f"{where}: argument {str(spec.get('name'))[:40]!r} names no blob file; regenerate the "
                                 "oracle with `tritonbisect repro`")


def absolute_blobs(context: dict[str, Any], root: Path) -> dict[str, Any]:
    """A copy whose blob paths are absolute (a candidate runs from another folder), without the
    outputs recorded after the original launch (they do not fit a changed kernel: the good
    Triton's run is the reference)."""
    _check_args(context, root / CONTEXT)
    out = copy.deepcopy(context)
    for spec in out.get("args", []):
        spec.pop("after", None)
    home = root.resolve()
    for init in _blob_fields(out):
        blob = (root / str(init["file"])).resolve()
        # the folder's context.json names its blobs: one outside it would be copied into the
        # reduced oracle, which people attach to issues
        if not blob.is_relative_to(home):
            raise InputError(f"{root / CONTEXT}: blob {str(init['file'])[:80]!r} is outside the oracle's folder; "
                             "regenerate the oracle with `tritonbisect repro`")
        if not blob.is_file():
            raise InputError(f"{root / CONTEXT}: blob {str(init['file'])[:80]!r} is not in the oracle's folder; "
                             "copy the whole folder, or regenerate it with `tritonbisect repro`")
        init["file"] = str(blob)
    return out


def source_literal(source: str) -> str:
    """A Python string literal of `source` (a raw triple-quoted one where it can be)."""
    if "'''" not in source and not source.endswith("'") and "\\" not in source:
        return "r'''\n" + source + "'''"
    return repr("\n" + source)


def script_with_source(script_text: str, source: str) -> str:
    node = _source_assignment(pyast.parse(script_text))
    assert node is not None and node.end_lineno is not None
    lines = script_text.splitlines(keepends=True)
    new = f"KERNEL_SOURCE = {source_literal(source)}\n"
    return "".join(lines[: node.lineno - 1]) + new + "".join(lines[node.end_lineno:])


def write(oracle: OracleDir, cand: Candidate, dest: Path, *, copy_blobs: bool = False) -> Path:
    """Write `cand` as an oracle folder; its script's path. copy_blobs: a standalone folder
    (blobs copied under blobs/ with relative paths), else blobs stay where they are."""
    dest.mkdir(parents=True, exist_ok=True)
    if oracle.compiles:
        for helper in oracle.root.glob("*.py"):  # the script and its standard-library helpers
            if helper.name != COMPILE_SOURCE:
                shutil.copyfile(helper, dest / helper.name)
        (dest / (oracle.ir_file or COMPILE_SOURCE)).write_text(cand.source, encoding="utf-8")
        (dest / COMPILE_CONTEXT).write_text(json.dumps(cand.context, indent=1) + "\n", encoding="utf-8")
        return dest / COMPILE_SCRIPT
    context = copy.deepcopy(cand.context)
    if copy_blobs:
        (dest / "blobs").mkdir(exist_ok=True)
        for init in _blob_fields(context):
            src = Path(init["file"])
            shutil.copyfile(src, dest / "blobs" / src.name)
            init["file"] = f"blobs/{src.name}"
    for helper in oracle.root.glob("oracle_*.py"):  # the script's standard-library helpers, beside it
        shutil.copyfile(helper, dest / helper.name)
    script = dest / RUNTIME_SCRIPT
    script.write_text(script_with_source(oracle.script_text, cand.source), encoding="utf-8")
    script.chmod(0o755)
    (dest / CONTEXT).write_text(json.dumps(context, indent=1) + "\n", encoding="utf-8")
    return script
