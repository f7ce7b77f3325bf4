# ruff: noqa: UP031  (runs on the traced program's Python, which may be older than the tool's)
"""What a process knew at its end, for `tritonbisect trace` to explain what it did not see.

At exit, a process that imported triton or Inductor appends one JSON line to
`tracer_processes.log`: how many compilations and launches the tracer recorded in it, and
what Inductor says about how it ran its kernels (its static launcher, whose launches never
reach Triton's launch hooks; kernels it loaded from its caches for that launcher; FX graph
cache hits; CUDA graph trees). Nothing here touches the program: it reads module globals.
A process that ends through `os._exit` (a forked multiprocessing worker) writes nothing.
"""

import atexit
import json
import os
import sys

from . import config

PROCESSES_LOG = "tracer_processes.log"

_state = globals().get("_state") or {"atexit": False, "compilations": 0, "launches": 0, "captured": 0}

# Inductor counters worth reporting (torch._dynamo.utils.counters["inductor"]).
COUNTERS = ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass",
            "triton_bundler_load_static_autotuner", "triton_bundler_save_static_autotuner")


def count(what):
    _state[what] = _state.get(what, 0) + 1


def after_fork_in_child():
    for key in ("compilations", "launches", "captured"):
        _state[key] = 0


def inductor_facts():
    """What Inductor's modules say, read without importing anything new."""
    facts: dict = {}
    cfg = sys.modules.get("torch._inductor.config")
    if cfg is not None:
        for name in ("use_static_cuda_launcher", "use_static_triton_launcher"):
            try:
                facts["static_launcher"] = bool(getattr(cfg, name))
                break
            except Exception:
                continue
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None) if utils is not None else None
    if counters is not None:
        try:
            inductor = counters.get("inductor", {}) if hasattr(counters, "get") else counters["inductor"]
            facts["counters"] = {k: int(inductor[k]) for k in COUNTERS if inductor.get(k)}
        except Exception:
            pass
    facts["cudagraph_trees"] = "torch._inductor.cudagraph_trees" in sys.modules
    return facts


def process_record():
    record = {"run": config.run_token(), "pid": os.getpid(), "triton": "triton" in sys.modules,
              "inductor": "torch._inductor" in sys.modules,
              "compilations": _state["compilations"], "launches": _state["launches"],
              "captured": _state["captured"]}
    if record["inductor"]:
        record.update(inductor_facts())
        record["static_env"] = os.environ.get("TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER")
    return record


def write_at_exit(out_dir):
    if not ("triton" in sys.modules or "torch._inductor" in sys.modules):
        return
    try:
        line = json.dumps(process_record()) + "\n"
        os.makedirs(out_dir, exist_ok=True)
        fd = os.open(os.path.join(out_dir, PROCESSES_LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except Exception:  # at exit nothing may reach the program; the summary says what it lacks
        pass


def ensure_atexit(out_dir):
    if not _state["atexit"]:
        _state["atexit"] = True
        atexit.register(write_at_exit, out_dir)
