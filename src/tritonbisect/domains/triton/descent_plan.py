"""The plan of a `triton` session's descent into LLVM (the "triton-llvm" workflow), decided
when the session is created and kept in session.json so that `resume` can continue either
phase. The descent itself (domains/llvm/descent.py) reads it; the `triton` command and its
hunt target make it, and check it before any build through the workflow's preflight
(session/workflows.py), so that this domain does not import the LLVM one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tritonbisect.core.errors import InputError

WORKFLOW = "triton-llvm"
EXTRA_KEY = "descent"


@dataclass
class DescentPlan:
    """What the descent needs, decided when the session is created."""

    descend: bool = True
    llvm_dir: str | None = None
    compat_map: str | None = None
    test: dict = field(default_factory=dict)
    build: dict = field(default_factory=dict)  # TritonBuildOptions fields
    llvm: dict = field(default_factory=dict)  # LLVMConfig fields
    bump: dict | None = None  # filled when the Triton culprit is an LLVM bump

    def save(self, session) -> None:
        """Kept in session.json (`extra`), written atomically with the session."""
        session.extra[EXTRA_KEY] = asdict(self)
        session.save()

    @classmethod
    def load(cls, session) -> DescentPlan:
        data = session.extra.get(EXTRA_KEY)
        if not isinstance(data, dict):
            raise InputError(f"session {session.id} has no LLVM descent plan; is it corrupt?")
        return cls(**data)
