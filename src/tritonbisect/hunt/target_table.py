"""Every bisector `hunt` can use, in the order it tries them: the first whose `chooses` accepts
the hunt's options is the night's target.

The entries are "module:attr" references to each domain's `HUNT_TARGET` (a TargetFactory,
hunt/targets.py). Adding a bisector to the hunt is its `domains/<name>/hunt_target.py`, its
options on the hunt command, and one line here.
"""

from __future__ import annotations

from tritonbisect.core.refs import resolve
from tritonbisect.hunt.targets import TargetFactory

HUNT_TARGETS: tuple[str, ...] = (
    # --torch-dir first: with it, --triton-dir names the source of the pinned Triton commits
    "tritonbisect.domains.torch.hunt_target:HUNT_TARGET",
    "tritonbisect.domains.triton.hunt_target:HUNT_TARGET",
    # the user's own commands: the fallback, chosen when nothing above is
    "tritonbisect.domains.command.hunt_target:HUNT_TARGET",
)


def hunt_targets() -> list[TargetFactory]:
    """The factories of HUNT_TARGETS, in order."""
    factories = []
    for ref in HUNT_TARGETS:
        factory = resolve(ref)
        if not isinstance(factory, TargetFactory):  # pragma: no cover - a wrong table entry
            raise TypeError(f"{ref} is not a TargetFactory")
        factories.append(factory)
    return factories
