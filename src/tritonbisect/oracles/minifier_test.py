"""A PyTorch minifier's repro script (`repro.py`, `minifier_launcher.py`) as a bisect test.

    write_minifier_test(Path("repro.py"), out)   # out/minifier_test.py + out/repro_script.py
    spec = minifier_commands(out)                # the TestSpec: `python out/minifier_test.py`

The script is copied (the folder can move); minifier_template.py runs it with `run` (a launcher
would otherwise minify) and turns its end into a status and an exit code (see its docstring).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from tritonbisect.builds.recipes import TestSpec
from tritonbisect.core.errors import InputError

TEMPLATE = Path(__file__).with_name("minifier_template.py")
SCRIPT_NAME = "minifier_test.py"
COPY_NAME = "repro_script.py"
DEFAULT_TIMEOUT = 1800.0


def write_minifier_test(script: Path, out_dir: Path, *, timeout: float | None = None) -> Path:
    """Write the test folder; InputError when the script cannot be read."""
    if script.is_symlink() or not script.is_file():
        raise InputError(f"{script}: not a regular file")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = TEMPLATE.read_text(encoding="utf-8")
    for marker, value in (('SCRIPT = "repro_script.py"  # <<SCRIPT>>', f"SCRIPT = {json.dumps(COPY_NAME)}"),
                          ("DEFAULT_TIMEOUT = 1800.0  # <<TIMEOUT>>",
                           f"DEFAULT_TIMEOUT = {float(timeout) if timeout else DEFAULT_TIMEOUT!r}")):
        if marker not in text:  # pragma: no cover - the template is ours
            raise RuntimeError(f"minifier template lost its marker {marker!r}")
        text = text.replace(marker, value, 1)
    dest = out / COPY_NAME
    if dest.exists():
        dest.chmod(0o644)
    try:
        shutil.copyfile(script, dest)
    except OSError as exc:
        raise InputError(f"cannot copy {script}: {exc}") from None
    wrapper = out / SCRIPT_NAME
    wrapper.write_text(text, encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def minifier_commands(out_dir: Path) -> TestSpec:
    script = shlex.quote(str(Path(out_dir).resolve() / SCRIPT_NAME))
    return TestSpec(command=f"python {script}")
