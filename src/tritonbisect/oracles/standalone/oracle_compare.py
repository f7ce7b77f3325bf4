# ruff: noqa: UP031, B905  (runs on the target's Python, which may be older than the tool's)
"""The tensors after a launch against the reference: bitwise first, then per dtype tolerance,
NaNs, the first index that differs, and one line per difference. Copied beside the script."""


def unravel(flat, shape):
    index = []
    for size in reversed(shape):
        size = max(size, 1)
        index.append(flat % size)
        flat //= size
    return list(reversed(index))

def identical(torch, got, exp, floating):
    """Bitwise-equal fast path (NaNs never equal themselves: those take the long way)."""
    if exp.numel() == 0:
        return True
    try:
        if not torch.equal(got, exp):
            return False
        return not floating or not bool(torch.isnan(exp).any())
    except (RuntimeError, TypeError):  # dtypes without these kernels
        return False

def compare_one(torch, key, got, exp, tolerance):
    dtype_name = str(exp.dtype).replace("torch.", "")
    rec = {
        "name": key,
        "dtype": dtype_name,
        "shape": list(exp.shape),
        "numel": exp.numel(),
        "mismatches": 0,
        "max_abs_err": 0.0,
        "max_rel_err": 0.0,
        "nan_mismatches": 0,
        "first_mismatch_index": None,
        "status": "pass",
    }
    if list(got.shape) != list(exp.shape) or got.dtype != exp.dtype:
        rec.update(status="mismatch", mismatches=exp.numel(),
                   reason="got %s %s, golden %s %s" % (got.dtype, list(got.shape), exp.dtype, list(exp.shape)))
        return rec
    floating = exp.dtype.is_floating_point or exp.dtype.is_complex
    rtol, atol = tolerance.get(dtype_name, (1e-5, 1e-6)) if floating else (0.0, 0.0)
    rec["rtol"], rec["atol"] = rtol, atol
    if identical(torch, got, exp, floating):
        return rec
    if floating:
        if exp.dtype.is_complex:
            g = torch.view_as_real(got).to(torch.float64)
            e = torch.view_as_real(exp).to(torch.float64)
        else:
            g = got.to(torch.float64)
            e = exp.to(torch.float64)
        nan_g, nan_e = torch.isnan(g), torch.isnan(e)
        nan_bad = nan_g ^ nan_e
        same = (g == e) | (nan_g & nan_e)
        diff = (g - e).abs()
        diff = torch.where(same, torch.zeros_like(diff), diff)
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
        bad = (diff > atol + rtol * e.abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)) | nan_bad
        bad = bad & ~same
        rel = diff / e.abs().clamp_min(1e-30)
        rel = torch.where(same, torch.zeros_like(rel), rel)
        if exp.dtype.is_complex:
            bad = bad.any(dim=-1)
        rec["max_abs_err"] = float(diff.max())
        rec["max_rel_err"] = float(rel.nan_to_num(nan=float("inf")).max())
        rec["nan_mismatches"] = int(nan_bad.sum())
    else:
        if exp.dtype == torch.bool:
            bad = got != exp
            rec["max_abs_err"] = float(bad.any())
        else:
            bad = got != exp
            if bad.any():
                diff = (got.to(torch.int64) - exp.to(torch.int64)).abs()
                rec["max_abs_err"] = float(diff.max())
                rec["max_rel_err"] = float((diff.to(torch.float64) / exp.to(torch.float64).abs().clamp_min(1)).max())
    count = int(bad.sum())
    rec["mismatches"] = count
    if count:
        flat = int(bad.reshape(-1).nonzero()[0])
        rec["first_mismatch_index"] = unravel(flat, list(exp.shape))
        rec["status"] = "mismatch"
    return rec

def compare(torch, outputs, expected, tolerance):
    records = []
    for key in sorted(expected):
        if key not in outputs:
            continue
        records.append(compare_one(torch, key, outputs[key], expected[key], tolerance))
    return records

def describe(rec):
    where = "" if rec["first_mismatch_index"] is None else " first at index %s" % rec["first_mismatch_index"]
    name = rec["name"]
    if name.startswith("#guard"):
        return "%s: out-of-bounds write: %d guard byte(s) around a storage changed%s" % (
            name, rec["mismatches"], where)
    label = name.replace("#fresh", " (fresh pre-state vector)")
    if rec.get("reason"):
        return "%s: %s" % (label, rec["reason"])
    return "%s: %d of %d elements differ (max abs err %.4g, max rel err %.4g, %d NaN mismatches)%s" % (
        label, rec["mismatches"], rec["numel"], rec["max_abs_err"], rec["max_rel_err"],
        rec["nan_mismatches"], where)
