"""What a Triton MLIR text says about how it was compiled: the module's attributes, an MLIR
reproducer's pipeline and the options of its passes.

    module_options(ttgir)   -> {"num_warps": 4, "num_ctas": 1, "warp_size": 32, "target": "cuda:90"}
    split_reproducer(text)  -> (module text, pipeline text or None)
    pipeline_passes(pipe)   -> [("tritongpu-pipeline", {"num-stages": "3", ...}), ...]
    pipeline_options(pipe)  -> {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "target": "cuda:90"}
"""

from __future__ import annotations

import re

_ATTR = r'"?{name}"?\s*=\s*(?:"(?P<text>[^"]*)"|(?P<num>-?\d+))'
_MODULE_ATTRS = {"num_warps": "ttg.num-warps", "num_ctas": "ttg.num-ctas", "warp_size": "ttg.threads-per-warp",
                 "target": "ttg.target"}
_LEGACY = {"ttg.": "triton_gpu."}
_RESOURCES = re.compile(r"\{-#\s*external_resources\s*:", re.S)
_PIPELINE = re.compile(r'\bpipeline\s*:\s*"(?P<pipe>(?:[^"\\]|\\.)*)"')
_PTX_TARGET = re.compile(r"^\s*\.target\s+sm_(\d+)a?\b", re.M)


def _module_head(text: str) -> str:
    m = re.search(r"^\s*module\b.*$", text, re.M)
    return m.group(0) if m else ""


def module_options(text: str) -> dict[str, int | str]:
    """The compile options a TTGIR module's attributes record (TTIR has none)."""
    head = _module_head(text)
    out: dict[str, int | str] = {}
    for key, attr in _MODULE_ATTRS.items():
        for name in (attr, attr.replace("ttg.", _LEGACY["ttg."])):
            m = re.search(_ATTR.format(name=re.escape(name)), head)
            if m:
                out[key] = m.group("text") if m.group("text") is not None else int(m.group("num"))
                break
    return out


def ptx_arch(text: str) -> int | None:
    m = _PTX_TARGET.search(text)
    return int(m.group(1)) if m else None


def split_reproducer(text: str) -> tuple[str, str | None]:
    """An MLIR reproducer's module and the pipeline its `mlir_reproducer` resource names."""
    m = _RESOURCES.search(text)
    if m is None:
        return text, None
    resources = text[m.start():]
    pipe = _PIPELINE.search(resources)
    if "mlir_reproducer" not in resources or pipe is None:
        return text, None
    return text[: m.start()].rstrip() + "\n", pipe.group("pipe").encode().decode("unicode_escape")


def _top_split(text: str, sep: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def pipeline_passes(pipeline: str) -> list[tuple[str, dict[str, str]]]:
    """The passes of a textual pass pipeline, nesting (`builtin.module(any(...))`) flattened."""
    out: list[tuple[str, dict[str, str]]] = []
    for part in _top_split(pipeline, ","):
        m = re.match(r"^([\w.-]+)\s*(.*)$", part, re.S)
        if not m:
            continue
        name, rest = m.group(1), m.group(2).strip()
        if rest.startswith("("):
            out.extend(pipeline_passes(rest[1:-1]))
            continue
        options: dict[str, str] = {}
        if rest.startswith("{"):
            for opt in re.findall(r"([\w-]+)=(\{[^}]*\}|\S+?)(?=\s+[\w-]+=|\s*\}?$)", rest[1:-1].strip()):
                options[opt[0]] = opt[1]
        out.append((name, options))
    return out


def pipeline_options(pipeline: str) -> dict[str, int | str]:
    """num_warps, num_ctas, num_stages, warp_size and the target the pipeline's passes were built with."""
    out: dict[str, int | str] = {}
    for name, options in pipeline_passes(pipeline):
        for option, key in (("num-warps", "num_warps"), ("num-ctas", "num_ctas"), ("num-stages", "num_stages"),
                            ("threads-per-warp", "warp_size")):
            if options.get(option, "").isdigit() and key not in out:
                out[key] = int(options[option])
        if "target" in options and "target" not in out:
            out["target"] = options["target"]
        if "compute-capability" in options and options["compute-capability"].isdigit() and "target" not in out:
            out["target"] = f"cuda:{options['compute-capability']}"
        if name.startswith("tritonamdgpu") and options.get("arch") and "target" not in out:
            out["target"] = f"hip:{options['arch']}"
    return out
