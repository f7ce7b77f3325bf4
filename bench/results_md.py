"""Replace one benchmark's `## ` section of bench/RESULTS.md, leaving every other section alone.

Several benchmarks (run by different people, possibly at once) share RESULTS.md, so the file is
re-read right before writing and replaced atomically: a concurrent writer's section survives
unless both write in the same instant, and a reader never sees half a file.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
_EMPTY = "# Benchmark results\n"


def write_section(title: str, body: str, path: Path = RESULTS) -> None:
    """Put the section `## <title>` with `body` into `path`, in place of the old one or at the end.

    `title` may be given with or without its "## "; `body` may start with the heading line
    itself (it is then not repeated). Sections are separated by one blank line.
    """
    heading = title if title.startswith("## ") else f"## {title}"
    body = body.strip("\n")
    if body.split("\n", 1)[0].rstrip() != heading:
        body = f"{heading}\n\n{body}"
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else _EMPTY
    match = re.search(rf"^{re.escape(heading)}[ \t]*$", text, re.MULTILINE)
    if match is None:
        new = f"{text.rstrip(chr(10))}\n\n{body}\n"
    else:
        nxt = re.compile(r"^## ", re.MULTILINE).search(text, match.end())
        rest = text[nxt.start():] if nxt else ""
        new = text[: match.start()] + body + "\n" + (f"\n{rest.rstrip(chr(10))}\n" if rest else "")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(new)
        # mkstemp makes the file private; keep the mode the results file had (or a plain one)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
