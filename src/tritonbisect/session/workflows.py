"""Every session workflow, by the name session.json keeps, as a reference to its continuation.

A workflow's continuation runs each time a phase of its session ends:
`continue_fn(session, result)` returns True when it appended a phase that should run next
(the LLVM descent after a Triton culprit that bumps LLVM). The values are "module:attr"
strings, so the session names the domains' continuations without importing the domains,
and imports one only when a session of that workflow runs. Adding a workflow is one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.core.refs import resolve

# (session, the phase's result) -> True when it appended the phase to run next; the session
# module imports this one, so the types stay unnamed here
ContinueFn = Callable[[Any, Any], bool]

WORKFLOWS: dict[str, str] = {
    # `triton`: nightlies first (--wheel-index), then the Triton bisect, then the LLVM descent
    "triton-llvm": "tritonbisect.domains.llvm.descent:continue_after_triton",
    # `torch --wheel-index`: the nightlies, then source builds inside their bracket
    "torch-nightlies": "tritonbisect.domains.torch.nightly_workflow:continue_after_torch_nightlies",
    # `pairs`: name the first bad pair and the LLVM range it leaves
    "pairs": "tritonbisect.domains.llvm.pairs:report_first_bad_pair",
}


# What a workflow checks before its session is created (its domain's options against the
# repositories, before any build): "module:attr" of a callable (bisector, plan) -> Any. A
# command reaches the check through this table, so that a domain need not import the domain
# whose phases follow its own (the Triton command, the LLVM descent's checks).
PREFLIGHTS: dict[str, str] = {
    "triton-llvm": "tritonbisect.domains.llvm.descent:preflight",
}


def preflight(name: str) -> Callable[[Any, Any], Any]:
    """The preflight check of the workflow `name` (a check that passes for one without)."""
    ref = PREFLIGHTS.get(name)
    if ref is None:
        return lambda _bisector, _plan: None
    check: Callable[[Any, Any], Any] = resolve(ref)
    return check


def continuation(name: str) -> ContinueFn:
    """The continuation of the workflow `name`; InputError for a name this version lacks."""
    try:
        ref = WORKFLOWS[name]
    except KeyError:
        raise InputError(f"session uses unknown workflow {name!r}") from None
    continue_fn: ContinueFn = resolve(ref)
    return continue_fn
