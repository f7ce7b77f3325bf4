"""The hint of a phase (--prefer-pass, --prefer-files): its prior over the phase's commits, what
it weighs (printed once), and at the end whether the evidence went for or against it.

Called by the phase's search (session/phase_flaky.py) through `prior_of(run)` and
`record_verdict(run, culprit)`; `check_hint(session)` validates a new session's hint
before anything runs (one clear line for a pass no Passes.td declares). The hint's facts
are stored in session.json under extra["hint"][phase] for the report and the JSON.
"""

from __future__ import annotations

from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.search import prior

_HINTS: dict[tuple, Any] = {}


def wanted(settings: Any) -> bool:
    return bool(getattr(settings, "prefer_pass", None) or getattr(settings, "prefer_files", None))


def _find(spec: Any, settings: Any, range_size: int):
    from tritonbisect.session.hint import find_hint

    passes = tuple(getattr(settings, "prefer_pass", None) or ())
    globs = tuple(getattr(settings, "prefer_files", None) or ())
    key = (str(spec.repo), spec.good, spec.bad, passes, globs, bool(spec.first_parent))
    if key not in _HINTS:
        _HINTS[key] = find_hint(spec.repo, spec.good, spec.bad, passes=passes, globs=globs,
                                first_parent=bool(spec.first_parent), range_size=range_size)
    return _HINTS[key]


def check_hint(settings: Any, specs: Any) -> None:
    """A new session's hint must name something in its first commit-range phase (PhaseSpec):
    InputError otherwise, before the session is made."""
    if not wanted(settings):
        return
    from tritonbisect.core.history import History

    for spec in specs:
        if spec.candidates:
            continue
        cands = History(spec.repo).candidates(spec.good, spec.bad, first_parent=spec.first_parent)
        _find(spec, settings, len(cands.order))
        return


def prior_of(run: Any) -> list[float] | None:
    """P(culprit = commit) for the phase's commits under the hint; None without one (or where
    it does not apply). Computed once per phase run; the first call prints what it weighs."""
    if "_hint_prior" in run.__dict__:
        return run.__dict__["_hint_prior"]
    run.__dict__["_hint_prior"] = None
    settings, spec = run.settings, run.spec
    if not wanted(settings):
        return None
    if spec.candidates:
        run.ui.note(f"the hint ({_described(settings)}) weighs commits of a source range; phase "
                    f"{spec.name} tests a list of builds, so it searches without it")
        return None
    try:
        hint = _find(spec, settings, len(run.cands.order))
    except InputError as exc:  # a later phase (another repository): the hint does not apply there
        run.ui.note(f"phase {spec.name}: {exc}; searching without the hint")
        return None
    for line in hint.lines():
        run.ui.note(line)
    record = hint.to_dict()
    in_range = frozenset(c for c in hint.commits if c in run._in_set)
    record["commits"] = len(in_range)
    if not in_range:
        run.session.extra.setdefault("hint", {})[spec.name] = record
        return None
    weights = prior.prior_weights(run.cands.order, in_range)
    record["prior_mass"] = round(sum(w for c, w in zip(run.cands.order, weights, strict=True) if c in in_range), 4)
    run.session.extra.setdefault("hint", {})[spec.name] = record
    run.__dict__["_hint_prior"] = weights
    run.__dict__["_hint_commits"] = in_range
    return weights


def record_verdict(run: Any, culprit: str | None) -> None:
    """Say whether the evidence went for or against the hint (stored with the hint): the mass
    the hinted commits hold after every verdict, from the prior."""
    from tritonbisect.search import bayes

    weights = run.__dict__.get("_hint_prior")
    if weights is None:
        return
    ev = run._evidence()
    try:
        post = bayes.posterior(run.cands, ev.counts, model=run._flake_model(), marks=ev.marks, prior=weights)
    except ValueError:
        return
    verdict = prior.hint_verdict(run.cands.order, run.__dict__["_hint_commits"], weights, post.w, culprit)
    entry = run.session.extra.setdefault("hint", {}).setdefault(run.spec.name, {})
    entry.update(posterior_mass=round(verdict.posterior_mass, 4), culprit_hinted=verdict.culprit_hinted,
                 against=verdict.against, verdict=verdict.sentence())
    run.ui.note(f"hint: {verdict.sentence()}")


def _described(settings: Any) -> str:
    parts = [f"--prefer-pass {p}" for p in getattr(settings, "prefer_pass", None) or ()]
    parts += [f"--prefer-files {g}" for g in getattr(settings, "prefer_files", None) or ()]
    return " ".join(parts)
