"""One reduction from start to written result: the oracle, two Pythons, an output folder.

Shared by `reduce` (whichever way its two Tritons were named) and a bisect's `--reduce`."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import TritonBisectError
from tritonbisect.reduce import oracle_io, output
from tritonbisect.reduce.candidate_runner import Settings
from tritonbisect.reduce.driver import reduce, summary
from tritonbisect.reduce.pool import Pool


def run_reduction(oracle: oracle_io.OracleDir, settings: Settings, out: Path, levels: tuple[str, ...], *,
                  progress: Callable[[str], None], fresh: bool = False,
                  env: dict[str, str] | None = None) -> dict[str, Any]:
    """Reduce `oracle` into `out`; its summary (driver.summary). NotReproducible passes through."""
    pool = Pool(env, fresh=fresh)
    work = Path(tempfile.mkdtemp(prefix="tritonbisect-reduce-"))
    try:
        try:
            outcome = reduce(oracle, work, settings, levels, pool, progress)
            output.write(oracle, outcome.reduced, out, pool, settings.good_python, outcome.versions,
                         outcome.signature, work, settings.timeout, bad_python=settings.bad_python)
        except OSError as exc:
            raise TritonBisectError(f"reduce: {exc}", exit_code=4) from None
    finally:
        pool.close()
        shutil.rmtree(work, ignore_errors=True)
    result = summary(outcome, out)
    result["kernel_source"] = outcome.reduced.source
    result["oracle"] = str(out / oracle.script_name)
    result["kind"] = oracle.kind.value
    result["settings"] = {"levels": list(levels), "jobs": settings.jobs, "timeout": settings.timeout}
    return result
