"""What `workaround` says (pure): each passing change, cheapest first, with the exact code or
environment change to paste, or "none among N candidates"; and its --json."""

from __future__ import annotations

from typing import Any

from tritonbisect.workaround.changes import PTXAS_ENV, Change
from tritonbisect.workaround.search import Result
from tritonbisect.workaround.trials import Trial

SHOWN = 10


def _value(value: Any) -> str:
    return repr(value)


def paste(change: Change, kernel: str, context: dict[str, Any]) -> list[str]:
    """The lines a user pastes: a Config or launch arguments, and environment variables."""
    out: list[str] = []
    if change.options or change.constexprs:
        if context.get("configs"):  # an autotuned kernel: the config to put in its list
            params = ((context.get("job") or {}).get("what") or {}).get("params") or []
            values = {p["name"]: p.get("value") for p in params if p.get("kind") == "constexpr"}
            values.update(dict(change.constexprs))
            tuned = {k: v for k, v in values.items()
                     if any(k in (c.get("constexprs") or {}) for c in context["configs"])}
            options = dict((context.get("job") or {}).get("options") or {})
            options.update(dict(change.options))
            kw = ", ".join(f"{k}={_value(options[k])}" for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")
                           if options.get(k) is not None)
            out.append(f"triton.Config({tuned!r}, {kw})")
            rest = [(k, v) for k, v in change.options if k not in ("num_warps", "num_stages", "num_ctas", "maxnreg")]
            if rest:
                out.append(f"{kernel}[grid](..., {', '.join(f'{k}={_value(v)}' for k, v in rest)})")
        else:
            args = ", ".join(f"{k}={_value(v)}" for k, v in (*change.constexprs, *change.options) if v is not None)
            unset = [k for k, v in change.options if v is None]
            out.append(f"{kernel}[grid](..., {args})" if args else f"{kernel}[grid](...)  # without {', '.join(unset)}")
    for key, value in change.env:
        out.append(f"export {key}={value}")
    if any(k in PTXAS_ENV for k, _ in change.env):
        out.append("# (the good Triton's ptxas: keep its path, or copy the binary somewhere lasting)")
    return out


def text(result: Result, context: dict[str, Any]) -> str:
    target = result.target
    where = f"{target.get('backend')} {target.get('arch')}"
    lines = [f"{result.kernel} ({where}) under triton {result.bad_version}, as recorded: "
             f"{result.baseline.status}: {result.baseline.reason}"]
    lines += [f"note: {n}" for n in result.notes]
    if not result.workarounds:
        nearest = _nearest(result.trials)
        lines.append(f"no workaround: none among {result.tried} candidates passes")
        if nearest is not None:
            lines.append(f"  nearest: {nearest.change.describe()}: {nearest.status}: {nearest.reason}")
        return "\n".join(lines)
    against = f"the good Triton's ({result.good_version}) codegen" if result.reference is not None \
        else "the bad Triton's own compile"
    lines.append(f"{len(result.workarounds)} of {result.tried} candidates pass; cheapest first "
                 f"(cost: codegen against {against}; 0 = no worse):")
    for n, trial in enumerate(result.workarounds[:SHOWN], 1):
        moved = f" ({'; '.join(trial.moved[:3])})" if trial.moved else ""
        lines.append(f"  {n}. {trial.change.describe()}  cost {trial.cost:g}{moved}")
        lines += [f"       {line}" for line in paste(trial.change, result.kernel, context)]
    if len(result.workarounds) > SHOWN:
        lines.append(f"  ... {len(result.workarounds) - SHOWN} more (--json lists them all)")
    return "\n".join(lines)


def _nearest(trials: list[Trial]) -> Trial | None:
    from tritonbisect.workaround.cost import distance

    finite = [t for t in trials if distance(t.status, t.over_limits, t.differences) != float("inf")]
    return min(finite, key=lambda t: distance(t.status, t.over_limits, t.differences)) if finite else None


def as_json(result: Result, context: dict[str, Any]) -> dict[str, Any]:
    return {
        "workarounds": [{"change": t.change.to_dict(), "outcome": t.status, "cost": t.cost, "moved": t.moved,
                         "paste": paste(t.change, result.kernel, context)} for t in result.workarounds],
        "tried": result.tried,
        "kernel": result.kernel,
        "target": result.target,
        "bad_triton": result.bad_version,
        "good_triton": result.good_version,
        "recorded": {"outcome": result.baseline.status, "reason": result.baseline.reason},
        "compiled": result.compiled,
        "seconds": result.seconds,
        "seconds_to_first": result.first_seconds,
        "candidates_to_first": result.first_candidates,
        "notes": result.notes,
        "candidates": [{"change": t.change.to_dict(), "outcome": t.status, "reason": t.reason[:300]}
                       for t in result.trials],
    }
