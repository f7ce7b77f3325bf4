"""Source text of the toy repositories, kept as real files under toyworld/templates/.

templates/<repo>/ mirrors the layout of the generated repo, so a template is read where its
output lands. Variants of one file carry a tag before the extension (Version.old.h,
Version.new.h); fragments spliced into another file carry one too (main.loop-simple.c).
Templates that would otherwise end in .py end in .py.tmpl so that linters and importers leave
them alone. Placeholders are @NAME@, replaced by `_t`.
"""

from __future__ import annotations

import textwrap
from functools import cache
from importlib.resources import files


def _t(text: str, **subs: object) -> str:
    """`text` dedented, without leading blank lines, with each @KEY@ replaced by subs[KEY]."""
    out = textwrap.dedent(text).lstrip("\n")
    for key, value in subs.items():
        out = out.replace(f"@{key}@", str(value))
    return out


@cache
def load(repo: str, path: str) -> str:
    """The template templates/<repo>/<path> (path with '/' separators), verbatim."""
    node = files("testing.toyworld").joinpath("templates").joinpath(repo)
    for part in path.split("/"):
        node = node.joinpath(part)
    # newline="" would be safer, but Traversable.read_text takes only encoding; the templates
    # hold no carriage returns, so universal-newline reading returns them byte for byte.
    return node.read_text(encoding="utf-8")
