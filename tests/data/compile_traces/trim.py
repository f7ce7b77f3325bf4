"""How the traces in this folder were made (kept for provenance; run it again to refresh them).

They are cut from real captures on an H100 (torch 2.11.0+cu130, Triton 3.6.0, tritonparse
0.6.0; /work/notes/gpu/capture1, made by bench/gpu_capture.py): only the compilation events
of the chosen kernels and the launches that used them, gzip-compressed, without tensor blobs
(the compile oracle needs none).

    python tests/data/compile_traces/trim.py /work/notes/gpu/capture1
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

PICKS = {
    # folder name -> (capture program, kernels, at most this many compilations per kernel)
    "tma_descriptors": ("tma_descriptors", ("tma_matmul", "device_desc_scale", "tuple_axpy"), 1),
    "inductor_templates": ("compile_modes", ("triton_tem_fused_add_mm_relu_0", "triton_mm"), 1),
}


def main(capture: Path) -> None:
    here = Path(__file__).parent
    for name, (program, kernels, per_kernel) in PICKS.items():
        src = next((capture / program / "tritonparse" / "trace").glob("*.ndjson"))
        kept_hashes: dict[str, list[str]] = {k: [] for k in kernels}
        lines: list[str] = []
        for raw in src.read_text().splitlines():
            rec = json.loads(raw)
            etype = rec.get("event_type")
            if etype == "compilation":
                meta = rec["payload"]["metadata"]
                hashes = kept_hashes.get(meta.get("name"))
                if hashes is not None and len(hashes) < per_kernel:
                    hashes.append(meta["hash"])
                    lines.append(raw)
            elif etype == "launch":
                h = (rec.get("compilation_metadata") or {}).get("hash")
                if any(h in hs for hs in kept_hashes.values()):
                    for arg in (rec.get("extracted_args") or {}).values():
                        if isinstance(arg, dict):
                            arg.pop("blob_path", None)
                            if isinstance(arg.get("base"), dict):
                                arg["base"].pop("blob_path", None)
                    lines.append(json.dumps(rec))
        out = here / name / f"{src.name}.gz"
        out.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(out, "wt", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        print(f"{out}: {len(lines)} events, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
