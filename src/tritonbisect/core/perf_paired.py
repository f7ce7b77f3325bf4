"""The paired design of `--regress perf`: a step's runs interleaved with its reference's, judged
by `core.pairstats.compare`, and the sandwich's figures read back from the journal.

A paired step measures pairs: its reference (the good endpoint; for a culprit's check, its
parent) and its own commit, back to back on the same worker, in an order drawn per pair
(`first_in_pair`, seeded by the commits: a resumed or repeated step draws the same). The
runner calls `judge_pairs` after each batch; undecided, the step takes `samples` more pairs
up to its bound (`PerfSettings.pair_bounds`).

The sandwich: before the search, the bad endpoint is an A/B against the good one (is there a
regression, and how large); after it, each culprit is an A/B against its parent, with more
pairs. `sandwich_of` finds both in a phase's records for reports and `hunt`'s issues.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tritonbisect.core import pairstats
from tritonbisect.core.outcome import Kind, Policy
from tritonbisect.core.perf import METRIC_PREFIX, PAIRED, PerfDecision, PerfSettings
from tritonbisect.search.perfstats import median

REFERENCE = "reference"
CANDIDATE = "candidate"


def first_in_pair(reference: str, commit: str, index: int) -> str:
    """Which side of pair `index` runs first (REFERENCE or CANDIDATE): a fair coin seeded by
    the two commits and the index, so that no period of the machine's lines up with a side."""
    return REFERENCE if zlib.crc32(f"{reference}:{commit}:{index}".encode()) & 1 else CANDIDATE


def _metrics(tests: Sequence[Mapping[str, Any]]) -> list[float | None]:
    out: list[float | None] = []
    for t in tests:
        value = t.get("metric")
        out.append(None if value is None else float(value))
    return out


def judge_pairs(
    perf: PerfSettings,
    policy: Policy,
    kinds: Sequence[Kind],
    reference_kinds: Sequence[Kind],
    tests: Sequence[Mapping[str, Any]],
    reference_tests: Sequence[Mapping[str, Any]],
    reference: str,
    *,
    verify: bool,
    combine: Callable[..., tuple[Kind, Any, str]],
) -> PerfDecision:
    """Decide a paired step from its pairs so far (see the module docstring).

    A candidate run that did not pass decides as the runner's majority rule says (`combine`:
    a crash is a crash); a reference run that did not pass leaves the step unjudged."""
    cand, ref = _metrics(tests), _metrics(reference_tests)
    first, most = perf.pair_bounds(verify=verify)
    record: dict[str, Any] = {
        "design": PAIRED,
        "reference_commit": reference,
        "samples": [v for v in cand if v is not None],
        "reference_samples": [v for v in ref if v is not None],
        "order": [t.get("first") for t in tests],
        "settings": perf.to_dict(),
        **({"verify": True} if verify else {}),
    }
    if any(k is not Kind.PASS for k in kinds):
        kind, verdict, reason = combine(kinds, [str(t.get("reason")) for t in tests], policy)
        return PerfDecision(kind, verdict, reason, record)
    bad_ref = next((i for i, k in enumerate(reference_kinds) if k is not Kind.PASS), None)
    if bad_ref is not None:
        k = reference_kinds[bad_ref]
        why = (f"the reference {reference[:12]} did not pass its run {bad_ref + 1} "
               f"({k.value}: {reference_tests[bad_ref].get('reason')}): the pairs cannot be judged")
        kind = Kind.INFRA if k is Kind.INFRA else Kind.FLAKY
        return PerfDecision(kind, policy.verdict(kind), why, record)
    for side, got in (("", cand), ("the reference's ", ref)):
        missing = [i + 1 for i, v in enumerate(got) if v is None]
        if missing:
            why = (f"the test passed but reported no metric in {side}run {missing[0]} of {len(got)}: "
                   f"print a line {METRIC_PREFIX}<float> or write \"metric\" to $TRITONBISECT_RESULT")
            return PerfDecision(Kind.INFRA, policy.verdict(Kind.INFRA), why, record)
    values = [float(v) for v in cand if v is not None]
    refs = [float(v) for v in ref if v is not None]
    if any(v <= 0 for v in (*values, *refs)):
        why = f"the test reported a metric <= 0 ({min(*values, *refs):g}); --regress perf needs a positive time or rate"
        return PerfDecision(Kind.INFRA, policy.verdict(Kind.INFRA), why, record)
    record["median"] = median(values)
    record["reference_median"] = median(refs)
    n = min(len(values), len(refs))
    decide = lambda interval: pairstats.compare(  # noqa: E731
        refs[:n], values[:n], threshold=perf.threshold, alpha=perf.significance,
        higher_is_better=perf.higher_is_better, interval=interval,
    )
    found = decide(False)
    if found.decision == pairstats.UNDECIDED and n < most:
        more = min(perf.samples, most - n)
        return PerfDecision(Kind.FLAKY, policy.verdict(Kind.FLAKY), f"undecided after {n} pairs", record, more=more)
    found = decide(True)
    record.update(
        change=found.estimate.change, low=_finite(found.estimate.low), high=_finite(found.estimate.high),
        method=found.method, decision=found.decision, confidence=found.confidence,
        p_worse=found.p_worse, p_within=found.p_within, comparison=found.to_dict(),
    )
    against = f"against {reference[:12]}"
    detail = f"{found.text()} {against} ({found.method}, {n} pairs, {found.confidence * 100:g}% CI)"
    limit = f"the {perf.threshold * 100:g}% threshold"
    if found.decision == pairstats.WORSE:
        return PerfDecision(Kind.PERF, policy.verdict(Kind.PERF), f"{perf.what} regression: {detail}, beyond {limit}", record)
    if found.decision == pairstats.WITHIN:
        return PerfDecision(Kind.PASS, policy.verdict(Kind.PASS), f"within {limit}: {detail}", record)
    reason = (f"flaky: undecided after {n} pairs (the bound): {detail} straddles {limit}; "
              "the noise is too large for the threshold (more pairs: --max-samples)")
    return PerfDecision(Kind.FLAKY, policy.verdict(Kind.FLAKY), reason, record)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


# --- the sandwich, from the journal --------------------------------------------------------------


def _figure(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    perf = rec.get("perf")
    if not isinstance(perf, Mapping) or perf.get("design") != PAIRED:
        return None
    interval = pairstats.interval_of(perf)
    if interval is None:
        return None
    confidence = perf.get("confidence")
    return {
        "commit": _sha(rec.get("commit")),
        "against": _sha(perf.get("reference_commit")),
        "change": interval.change,
        "low": _finite(interval.low),
        "high": _finite(interval.high),
        "pairs": _pairs(perf),
        "method": _method(perf),
        "decision": perf.get("decision") if perf.get("decision") in DECISIONS else None,
        "confidence": float(confidence) if isinstance(confidence, (int, float)) else None,
        "text": figure_text(perf),
    }


DECISIONS = (pairstats.WORSE, pairstats.WITHIN, pairstats.UNDECIDED)


def _sha(value: Any) -> str | None:
    """A commit as the journal names it; None for anything that is not a plain hex sha (the
    journal is read as untrusted: it goes into Markdown)."""
    text = str(value or "")
    return text if text and len(text) <= 64 and all(c in "0123456789abcdef" for c in text) else None


def _pairs(perf: Mapping[str, Any]) -> int:
    samples = perf.get("samples")
    return len(samples) if isinstance(samples, list) else 0


def _method(perf: Mapping[str, Any]) -> str:
    method = perf.get("method")
    return method if method in (pairstats.FLOOR, pairstats.PAIRED) else "?"


def figure_text(perf: Mapping[str, Any]) -> str:
    """`+6.1% [4.9, 7.2] (floor, 30 pairs)` of a paired record's perf."""
    interval = pairstats.interval_of(perf)
    if interval is None or not all(isinstance(x, float) for x in (interval.change, interval.low, interval.high)):
        return ""
    return f"{interval.text()} ({_method(perf)}, {_pairs(perf)} pairs)"


def sandwich_of(records: Iterable[Mapping[str, Any]], good: str, bad: str) -> dict[str, Any] | None:
    """The A/B of the endpoints and of each culprit against its parent, as the journal has
    them: {"endpoints": figure | None, "culprits": [figure, ...]}; None when the phase was
    not judged paired."""
    endpoints = None
    culprits: dict[str, dict[str, Any]] = {}
    for rec in records:
        figure = _figure(rec)
        if figure is None:
            continue
        if rec.get("role") == "endpoint" and rec.get("commit") == bad and figure["against"] == good:
            endpoints = figure
        elif rec.get("role") == "confirm":
            culprits[str(rec.get("commit"))] = figure
    if endpoints is None and not culprits:
        return None
    return {"endpoints": endpoints, "culprits": list(culprits.values())}
