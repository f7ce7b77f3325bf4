# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""What the driver of the oracle's GPU would refuse to launch: a compiled kernel against the
target's per-block limits. No GPU needed: the numbers are the documented ones per architecture.

    over = check({"backend": "cuda", "arch": 90, "warp_size": 32}, stats)
    over[0]["text"]   # "shared memory: 262144 bytes per block needed, 232448 (227 KB) is sm_90's most"

`stats` are the codegen statistics of tb_codegen.collect (the compile metadata's `shared`,
`num_warps`, `tmem_size`, and `regs` from the cubin). Triton checks the same things when it
first loads a compiled kernel on a device (`CompiledKernel._init_handles`): the metadata's
`shared` against the device's opt-in shared memory per block
(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, HIP's sharedMemPerBlock), `tmem_size`
against 512 tensor-memory columns, and num_warps x warp size against the most threads the
loaded function may have (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024, fewer when its
registers do not fit 65536 per block); each raises OutOfResources there.

Standard library only; copied verbatim into compile-oracle folders.
"""

# Opt-in shared memory per block, bytes, by compute capability (CUDA C++ Programming Guide,
# "Technical Specifications per Compute Capability"; the same numbers as CUTLASS's
# smN_smem_capacity_bytes and the "Hardware limit" of Triton's OutOfResources on those GPUs).
CUDA_SHARED_PER_BLOCK = {
    50: 49152, 52: 49152, 53: 49152, 60: 49152, 61: 49152, 62: 49152,
    70: 98304, 72: 98304,
    75: 65536,
    80: 166912, 87: 166912,
    86: 101376, 89: 101376,
    90: 232448,
    100: 232448, 101: 232448, 103: 232448, 110: 232448,
    120: 101376, 121: 101376,
}
CUDA_REGISTERS_PER_BLOCK = 65536
CUDA_REGISTERS_PER_THREAD = 255
CUDA_REGISTER_UNIT = 256  # registers are given to a warp in units of 256
THREADS_PER_BLOCK = 1024
# tensor memory columns per block (Blackwell data-center parts), as Triton checks it
TMEM_COLUMNS = {100: 512, 101: 512, 103: 512, 107: 576, 110: 512}

# LDS per workgroup, bytes (hipDeviceProp sharedMemPerBlock): CDNA 1-3 and RDNA 64 KB, CDNA 4 160 KB
HIP_LDS_PER_BLOCK = {
    "gfx906": 65536, "gfx908": 65536, "gfx90a": 65536,
    "gfx940": 65536, "gfx941": 65536, "gfx942": 65536,
    "gfx950": 163840,
    "gfx1030": 65536, "gfx1100": 65536, "gfx1101": 65536, "gfx1102": 65536,
    "gfx1200": 65536, "gfx1201": 65536,
}


def _arch_number(arch):
    if isinstance(arch, int):
        return arch
    text = str(arch).lower().replace("sm_", "").rstrip("af")
    return int(text) if text.isdigit() else None


def _kb(value):
    return "%g KB" % (value / 1024.0)


def limits_for(target):
    """{"name": "sm_90", "shared": bytes or None, "threads": 1024, ...} for a job's target;
    a limit the oracle does not know for this target is None (not checked)."""
    backend = target.get("backend")
    arch = target.get("arch")
    if backend == "cuda":
        number = _arch_number(arch)
        return {
            "name": "sm_%s" % (number if number is not None else arch),
            "shared": CUDA_SHARED_PER_BLOCK.get(number) if number is not None else None,
            "threads": THREADS_PER_BLOCK,
            "registers_per_thread": CUDA_REGISTERS_PER_THREAD,
            "registers_per_block": CUDA_REGISTERS_PER_BLOCK,
            "tmem_columns": TMEM_COLUMNS.get(number) if number is not None else None,
        }
    if backend == "hip":
        name = str(arch).split(":")[0]
        return {"name": name, "shared": HIP_LDS_PER_BLOCK.get(name), "threads": THREADS_PER_BLOCK,
                "registers_per_thread": None, "registers_per_block": None, "tmem_columns": None}
    return {"name": str(arch), "shared": None, "threads": None, "registers_per_thread": None,
            "registers_per_block": None, "tmem_columns": None}


def _over(limit, needed, allowed, unit, text):
    return {"limit": limit, "needed": needed, "allowed": allowed, "unit": unit, "text": text}


def _number(stats, key):
    value = stats.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def check(target, stats):
    """Every limit of the target the compiled kernel is past: a list of
    {"limit", "needed", "allowed", "unit", "text"} (empty: the driver would launch it)."""
    lim = limits_for(target)
    name = lim["name"]
    out = []
    shared = _number(stats, "shared")
    if shared is not None and lim["shared"] is not None and shared > lim["shared"]:
        word = "LDS" if target.get("backend") == "hip" else "shared memory"
        out.append(_over("shared memory", shared, lim["shared"], "bytes",
                         "%s: %d bytes per block needed, %d (%s) is %s's most"
                         % (word, shared, lim["shared"], _kb(lim["shared"]), name)))
    tmem = _number(stats, "tmem_size")
    if tmem is not None and lim["tmem_columns"] is not None and tmem > lim["tmem_columns"]:
        out.append(_over("tensor memory", tmem, lim["tmem_columns"], "columns",
                         "tensor memory: %d columns needed, %d is %s's most" % (tmem, lim["tmem_columns"], name)))
    warps = _number(stats, "num_warps")
    warp_size = int(target.get("warp_size") or 32)
    regs = _number(stats, "regs") if target.get("backend") == "cuda" else None
    if regs is not None and lim["registers_per_thread"] is not None and regs > lim["registers_per_thread"]:
        out.append(_over("registers per thread", regs, lim["registers_per_thread"], "registers",
                         "registers: %d per thread needed, %d is the most" % (regs, lim["registers_per_thread"])))
    if warps is not None and lim["threads"] is not None:
        threads = warps * warp_size
        most = lim["threads"]
        why = ""
        if regs and lim["registers_per_block"]:
            per_warp = -(-regs * 32 // CUDA_REGISTER_UNIT) * CUDA_REGISTER_UNIT
            by_registers = (lim["registers_per_block"] // per_warp) * 32
            if by_registers < most:
                most = by_registers
                why = " (with %d registers a thread, %d registers per block)" % (regs, lim["registers_per_block"])
        if threads > most:
            out.append(_over("threads", threads, most, "threads",
                             "threads: %d warps x %d = %d per block needed, %d%s is %s's most"
                             % (warps, warp_size, threads, most, why, name)))
    return out


def reason(target, over):
    """The one line of an out_of_resources outcome."""
    name = limits_for(target)["name"]
    return ("the driver would refuse to launch it on %s (OutOfResources): %s"
            % (name, "; ".join(o["text"] for o in over)))
