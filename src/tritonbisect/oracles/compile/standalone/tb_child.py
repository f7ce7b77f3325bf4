#!/usr/bin/env python3
# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""The child process of a compile job: import triton, compile once, write what came out.

    python tb_child.py JOB.json OUT_DIR

It never decides an outcome: it records how far it got (OUT_DIR/phase: import, load,
bridge, compile, collect, done) and, when Python is still alive to say so, OUT_DIR/result.json
(ok, or the exception and its phase). A signal, an abort() or an LLVM fatal error kills it
before it can write a result; tb_runner classifies that from the phase and the exit status.
Standard library + the triton under test only; copied verbatim into compile-oracle folders.
"""

import faulthandler
import json
import os
import sys
import time
import traceback

PHASES = ("start", "import", "load", "bridge", "parse", "compile", "collect", "done")


class Progress:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.phase = "start"
        self.t0 = time.time()
        self.seconds = {}

    def enter(self, phase):
        now = time.time()
        self.seconds[self.phase] = round(now - self.t0, 4)
        self.t0 = now
        self.phase = phase
        # written before the phase starts, so a crash inside it leaves the phase behind
        with open(os.path.join(self.out_dir, "phase"), "w") as fh:
            fh.write(phase)
            fh.flush()


def cpu_seconds():
    """CPU seconds of this process and of its children it waited for (ptxas)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True, default=repr)
    os.replace(tmp, path)


def save_artifacts(asm, out_dir, name):
    folder = os.path.join(out_dir, "artifacts")
    os.makedirs(folder, exist_ok=True)
    files = {}
    for ext, content in sorted(asm.items()):
        path = os.path.join(folder, "%s.%s" % (name, ext))
        if isinstance(content, bytes):
            with open(path, "wb") as fh:
                fh.write(content)
        elif isinstance(content, str):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(content)
        else:
            continue
        files[ext] = path
    return files


def parse_ir(backend, path):
    """Parse an MLIR file (ttir, ttgir) with this Triton's dialects, as triton.compile will.

    An exception here means this Triton cannot read the IR (an unknown op, attribute or
    syntax): the IR came from another dialect version. LLVM IR, PTX and AMDGCN are left to
    triton.compile itself."""
    if not path.endswith((".ttir", ".ttgir", ".mlir")):
        return
    try:
        from triton._C.libtriton import ir
    except ImportError:
        return  # a layout the oracle does not know: triton.compile reads the file itself
    if not hasattr(ir, "parse_mlir_module"):
        return
    context = ir.context()
    ir.load_dialects(context)
    if hasattr(backend, "load_dialects"):
        backend.load_dialects(context)
    ir.parse_mlir_module(path, context)


def run(job, out_dir, progress):
    progress.enter("import")
    import triton

    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import tb_bridge

    what = job["what"]
    fn = None
    if what["kind"] == "python":
        progress.enter("load")
        fn = tb_bridge.load_kernel(what["file"], what["kernel"])

    progress.enter("bridge")
    target = tb_bridge.gpu_target(job["target"])
    backend = tb_bridge.make_backend(target)
    options, dropped = tb_bridge.filter_options(backend, job.get("options") or {})
    flavor = None
    if what["kind"] == "python":
        flavor, src = tb_bridge.make_source(triton, fn, what["params"], backend)
        name = what["kernel"]
    elif what["kind"] == "ir":
        src = os.path.abspath(what["file"])
        if not os.path.isfile(src):
            raise tb_bridge.BridgeError("IR file %s does not exist" % src)
        name = os.path.basename(src).rsplit(".", 1)[0]
        progress.enter("parse")  # can this Triton read this IR at all? (dialect drift: skip, not bad)
        parse_ir(backend, src)
        if what.get("first_stage") == "ttir":  # the frontend's TTIR (a make_ttir reproducer): run make_ttir too
            progress.enter("compile")
            src = tb_bridge.run_ttir_stage(backend, src, options, os.path.join(out_dir, name + ".ttir"))
    else:
        raise tb_bridge.BridgeError("unknown job kind %r" % (what["kind"],))

    timer = None
    if job.get("timing"):  # where the time goes: each stage timed from inside triton.compile
        import tb_timing

        tb_timing.warm_up()
        timer = tb_timing.Timer()
        timer.install(backend, src if what["kind"] == "python" else None)
    progress.enter("compile")
    started, cpu_started = time.perf_counter(), cpu_seconds()
    kernel = triton.compile(src, target=target, options=options)
    compile_seconds, compile_cpu = time.perf_counter() - started, cpu_seconds() - cpu_started

    progress.enter("collect")
    asm = dict(getattr(kernel, "asm", {}) or {})
    metadata = tb_bridge.plain(getattr(kernel, "metadata", {}))
    files = save_artifacts(asm, out_dir, name)
    return {
        "ok": True,
        "triton_version": getattr(triton, "__version__", "?"),
        "triton_dir": os.path.dirname(os.path.abspath(triton.__file__)),
        "api_flavor": flavor,
        "options": tb_bridge.plain(options),
        "dropped_options": dropped,
        "metadata": metadata,
        "artifacts": files,
        "compile_seconds": round(compile_seconds, 6),
        "compile_cpu_seconds": round(compile_cpu, 6),
        "timing": timer.to_dict() if timer is not None else None,
    }


def main(argv):
    faulthandler.enable()
    job_path, out_dir = argv[1], argv[2]
    os.makedirs(out_dir, exist_ok=True)
    progress = Progress(out_dir)
    with open(job_path, encoding="utf-8") as fh:
        job = json.load(fh)
    try:
        result = run(job, out_dir, progress)
    except BaseException as exc:  # noqa: BLE001 - every failure is reported with its phase
        traceback.print_exc()
        bridge = sys.modules.get("tb_bridge")
        harness = bridge is not None and isinstance(exc, bridge.BridgeError)
        result = {
            "ok": False,
            "phase": progress.phase,
            "harness_error": harness,
            "unsupported": bridge is not None and isinstance(exc, bridge.Unsupported),
            "error_type": type(exc).__name__,
            "error_module": type(exc).__module__,
            "message": str(exc)[:20000],
            "traceback": traceback.format_exc()[-20000:],
            # a module the kernel source imports that this environment lacks (e.g. torch)
            "missing_module": getattr(exc, "name", None) if isinstance(exc, ImportError) else None,
            "python": sys.executable,
        }
        triton = sys.modules.get("triton")
        if triton is not None:
            result["triton_version"] = getattr(triton, "__version__", "?")
    progress.enter("done")
    result["seconds"] = progress.seconds
    write_json(os.path.join(out_dir, "result.json"), result)
    return 0 if result["ok"] else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
