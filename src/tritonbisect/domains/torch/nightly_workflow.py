"""The "torch-nightlies" workflow of `tritonbisect torch --wheel-index`: once the nightlies'
phase has bracketed the regression, build from source inside that bracket."""

from __future__ import annotations

from typing import Any

from tritonbisect.domains.wheels.nightlies import PHASE as NIGHTLIES
from tritonbisect.domains.wheels.nightlies import continue_after_nightlies
from tritonbisect.session.phases import STATUS_SUPERSEDED

WORKFLOW = "torch-nightlies"


def continue_after_torch_nightlies(session: Any, result: Any) -> bool:
    """Workflow continuation: the source phase inside the nightlies' bracket."""
    phases = [p for p in session.phases() if p.status != STATUS_SUPERSEDED]
    if phases and phases[-1].spec.name == NIGHTLIES:
        return continue_after_nightlies(session, phases[-1])
    return False
