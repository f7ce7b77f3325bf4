"""The hint of a phase (--prefer-pass, --prefer-files): its prior over the phase's commits, what
it weighs (printed once), and at the end whether the evidence went for or against it.

A phase holds a `PhaseHint`, which its searches ask for the prior and its answer for the
verdict; `check_hint(settings, specs)` validates a new session's hint before anything runs
(one clear line for a pass no Passes.td declares). The hint's facts
are stored in session.json under extra["hint"][phase] for the report and the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tritonbisect.core.errors import InputError
from tritonbisect.search import prior

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.phase_context import PhaseContext

_HINTS: dict[tuple, Any] = {}


@dataclass
class HintSettings:
    """--prefer-pass NAME and --prefer-files GLOB (each repeatable), as given."""

    prefer_pass: list[str] = field(default_factory=list)
    prefer_files: list[str] = field(default_factory=list)

    @property
    def wanted(self) -> bool:
        return bool(self.prefer_pass or self.prefer_files)

    def described(self) -> str:
        parts = [f"--prefer-pass {p}" for p in self.prefer_pass]
        parts += [f"--prefer-files {g}" for g in self.prefer_files]
        return " ".join(parts)


def _find(spec: Any, settings: HintSettings, range_size: int):
    from tritonbisect.session.hint import find_hint

    passes = tuple(settings.prefer_pass)
    globs = tuple(settings.prefer_files)
    key = (str(spec.repo), spec.good, spec.bad, passes, globs, bool(spec.first_parent))
    if key not in _HINTS:
        _HINTS[key] = find_hint(spec.repo, spec.good, spec.bad, passes=passes, globs=globs,
                                first_parent=bool(spec.first_parent), range_size=range_size)
    return _HINTS[key]


def check_hint(settings: HintSettings, specs: Any) -> None:
    """A new session's hint must name something in its first commit-range phase (PhaseSpec):
    InputError otherwise, before the session is made."""
    if not settings.wanted:
        return
    from tritonbisect.core.history import History

    for spec in specs:
        if spec.candidates:
            continue
        cands = History(spec.repo).candidates(spec.good, spec.bad, first_parent=spec.first_parent)
        _find(spec, settings, len(cands.order))
        return


class PhaseHint:
    """The hint as one phase sees it: its prior over the phase's commits (computed once, when
    first asked; that first time prints what it weighs) and its verdict at the end."""

    def __init__(self, ctx: PhaseContext) -> None:
        self.settings = ctx.settings.hint
        self.spec = ctx.spec
        self.cands = ctx.cands
        self.ui = ctx.ui
        self.extra = ctx.session.extra  # session.json's extra: the hint's facts go under extra["hint"][phase]
        self._asked = False
        self._prior: list[float] | None = None
        self._commits: frozenset[str] = frozenset()

    def prior(self) -> list[float] | None:
        """P(culprit = commit) for the phase's commits under the hint; None without one (or
        where it does not apply)."""
        if self._asked:
            return self._prior
        self._asked = True
        settings, spec = self.settings, self.spec
        if not settings.wanted:
            return None
        if spec.candidates:
            self.ui.note(f"the hint ({settings.described()}) weighs commits of a source range; phase "
                         f"{spec.name} tests a list of builds, so it searches without it")
            return None
        try:
            hint = _find(spec, settings, len(self.cands.order))
        except InputError as exc:  # a later phase (another repository): the hint does not apply there
            self.ui.note(f"phase {spec.name}: {exc}; searching without the hint")
            return None
        for line in hint.lines():
            self.ui.note(line)
        record = hint.to_dict()
        in_set = frozenset(self.cands.order)
        in_range = frozenset(c for c in hint.commits if c in in_set)
        record["commits"] = len(in_range)
        if not in_range:
            self.extra.setdefault("hint", {})[spec.name] = record
            return None
        weights = prior.prior_weights(self.cands.order, in_range)
        record["prior_mass"] = round(
            sum(w for c, w in zip(self.cands.order, weights, strict=True) if c in in_range), 4
        )
        self.extra.setdefault("hint", {})[spec.name] = record
        self._prior = weights
        self._commits = in_range
        return weights

    def record_verdict(self, evidence: Any, model: Any, culprit: str | None) -> None:
        """Say whether the evidence went for or against the hint (stored with the hint): the
        mass the hinted commits hold after every verdict, from the prior."""
        from tritonbisect.search import bayes

        weights = self._prior
        if weights is None:
            return
        try:
            post = bayes.posterior(self.cands, evidence.counts, model=model, marks=evidence.marks, prior=weights)
        except ValueError:
            return
        verdict = prior.hint_verdict(self.cands.order, self._commits, weights, post.w, culprit)
        entry = self.extra.setdefault("hint", {}).setdefault(self.spec.name, {})
        entry.update(posterior_mass=round(verdict.posterior_mass, 4), culprit_hinted=verdict.culprit_hinted,
                     against=verdict.against, verdict=verdict.sentence())
        self.ui.note(f"hint: {verdict.sentence()}")

