"""Performance verdicts (`--regress perf`): a step's samples against its reference's.

The test reports a metric each run (a line `TRITONBISECT_METRIC=<float>` in its output, or
`"metric"` in the JSON result it writes to $TRITONBISECT_RESULT), e.g. a kernel's time from
`triton.testing.do_bench`. Lower is better unless `higher_is_better`.

Two designs (`--perf-design`):

    paired    (the default) every step runs interleaved with its reference on the same
              worker -- the good endpoint, or for the culprit's check its parent: reference,
              candidate, reference, candidate..., in a random order within each pair -- and
              is judged by `core.pairstats.compare` (core/perf_paired.py).
    unpaired  the good endpoint is the reference: it runs `max_samples` times once and its
              samples are the yardstick of every other step, which runs `samples` times and
              is judged by `search.perfstats.judge` (Mann-Whitney U, one-sided, at
              `significance`, against the reference scaled by `threshold`). For a test that
              cannot run two builds side by side.

Undecided, a step takes `samples` more (pairs), up to `max_samples`; still undecided, its
outcome is `flaky` (a skip for the search), with every sample in the journal.

The runner calls `judge_step` (unpaired) or `perf_paired.judge_pairs` after each batch of
test runs (`runner.execute_step`); the phase passes the reference in the step request
(`baseline_of` for unpaired, the reference commit for paired).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tritonbisect.core.outcome import Kind, Policy, Verdict
from tritonbisect.search import perfstats

METRIC_PREFIX = "TRITONBISECT_METRIC="
_METRIC_LINE = re.compile(r"^\s*TRITONBISECT_METRIC=\s*(\S+)\s*$", re.MULTILINE)

DEFAULT_SAMPLES = 5  # --repeat under --regress perf
DEFAULT_THRESHOLD = 0.05
DEFAULT_SIGNIFICANCE = 0.01
MAX_SAMPLES_FACTOR = 4  # default --max-samples: 4 x --repeat
VERIFY_SAMPLES = 30  # default --verify-samples: the sandwich's A/B pairs at most
MIN_PAIRS = 10  # a paired step's first batch: fewer pairs cannot decide at p < 0.01
PAIRED = "paired"
UNPAIRED = "unpaired"
DESIGNS = (PAIRED, UNPAIRED)


@dataclass(frozen=True)
class PerfSettings:
    samples: int = DEFAULT_SAMPLES  # test runs per batch
    max_samples: int = DEFAULT_SAMPLES * MAX_SAMPLES_FACTOR  # per step; the reference takes all
    threshold: float = DEFAULT_THRESHOLD  # allowed slow-down, a fraction (0.05 = 5%)
    significance: float = DEFAULT_SIGNIFICANCE
    higher_is_better: bool = False
    # UNPAIRED: what sessions written before the paired design was asked (the CLI says PAIRED)
    design: str = UNPAIRED
    verify_samples: int = VERIFY_SAMPLES  # paired: the endpoints' and each culprit's A/B, at most
    what: str = "perf"  # what a bad verdict is called: "perf", or "compile-time" (--regress compile-time)

    def __post_init__(self) -> None:
        if self.samples < 2:
            raise ValueError("--regress perf needs at least 2 samples per step (--repeat)")
        if self.max_samples < self.samples:
            raise ValueError("--max-samples must be at least --repeat")
        if not 0 <= self.threshold < 1:
            raise ValueError("--perf-threshold must be between 0% and 100%")
        if not 0 < self.significance < 0.5:
            raise ValueError("--significance must be between 0 and 0.5")
        if self.design not in DESIGNS:
            raise ValueError(f"--perf-design must be paired or unpaired, not {self.design!r}")
        if self.verify_samples < self.samples:
            raise ValueError("--verify-samples must be at least --repeat")

    @property
    def paired(self) -> bool:
        return self.design == PAIRED

    def first_batch(self, baseline: Sequence[float] | None) -> int:
        """Test runs of an unpaired step's first batch (the reference takes them all); the
        good endpoint of the paired design only shows that it passes and reports a metric."""
        if self.paired:
            return self.samples
        return self.max_samples if baseline is None else self.samples

    def pair_bounds(self, *, verify: bool) -> tuple[int, int]:
        """A paired step's first batch and most pairs: a search step's, or (`verify`) the
        sandwich's A/B of the endpoints or of a culprit against its parent, which takes at
        least what a search step may, up to `verify_samples`."""
        if verify:
            most = max(self.verify_samples, self.max_samples)
            return self.max_samples, most
        return min(self.max_samples, max(self.samples, MIN_PAIRS)), self.max_samples

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        better = "higher" if self.higher_is_better else "lower"
        if self.paired:
            first, most = self.pair_bounds(verify=False)
            return (
                f"bad = {better}-is-better metric worse than its reference's by more than "
                f"{self.threshold * 100:g}% (paired with the good endpoint, or with the parent "
                f"for a culprit; p < {self.significance:g}); {first} to {most} pairs per step, "
                f"the endpoints' and each culprit's A/B up to {max(self.verify_samples, self.max_samples)}"
            )
        return (
            f"bad = {better}-is-better metric worse than the good endpoint's by more than "
            f"{self.threshold * 100:g}% (Mann-Whitney U, one-sided, p < {self.significance:g}); "
            f"{self.samples} samples per step, up to {self.max_samples}"
        )


@dataclass
class PerfOptions:
    """--perf-threshold, --significance, --max-samples, --higher-is-better as given (None: the
    default); `resolve` makes the PerfSettings steps are judged by."""

    threshold: float | None = None
    significance: float | None = None
    max_samples: int | None = None
    higher_is_better: bool = False
    design: str | None = None  # None: a session from before --perf-design, judged unpaired
    verify_samples: int | None = None

    def resolve(self, repeat: int, *, what: str = "perf") -> PerfSettings:
        """The settings of `repeat` samples per step (`what`: the regress mode, which names a bad
        verdict); ValueError for values that do not go together."""
        max_samples = self.max_samples or repeat * MAX_SAMPLES_FACTOR
        return PerfSettings(
            samples=repeat,
            max_samples=max_samples,
            threshold=DEFAULT_THRESHOLD if self.threshold is None else self.threshold,
            significance=self.significance or DEFAULT_SIGNIFICANCE,
            higher_is_better=bool(self.higher_is_better),
            design=self.design or UNPAIRED,
            verify_samples=self.verify_samples or max(VERIFY_SAMPLES, max_samples),
            what=what,
        )


def parse_threshold(text: str | float) -> float:
    """`5%`, `5 %` or `0.05` as the fraction 0.05; ValueError with the reason otherwise."""
    raw = str(text).strip()
    percent = raw.endswith("%")
    try:
        value = float(raw[:-1].strip() if percent else raw)
    except ValueError:
        raise ValueError(f"--perf-threshold {text!r}: expected a percentage like 5% (or 0.05)") from None
    if percent:
        value /= 100
    if not math.isfinite(value) or not 0 <= value < 1:
        raise ValueError(f"--perf-threshold {text!r}: must be at least 0% and below 100%")
    return value


def metric_of(output_tail: str, result: Mapping[str, Any] | None) -> float | None:
    """The metric one test run reported: the JSON result's "metric", else the last
    `TRITONBISECT_METRIC=<float>` line of its output; None when there is none (or it is not
    a finite number)."""
    value: Any = None
    if result is not None and result.get("metric") is not None:
        value = result.get("metric")
    else:
        found = _METRIC_LINE.findall(output_tail)
        if found:
            value = found[-1]
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class PerfDecision:
    kind: Kind
    verdict: Verdict
    reason: str
    record: dict[str, Any]  # the journal's "perf" field of the step
    more: int = 0  # further test runs wanted before deciding


def judge_step(
    perf: PerfSettings,
    policy: Policy,
    kinds: Sequence[Kind],
    tests: Sequence[Mapping[str, Any]],
    baseline: Sequence[float] | None,
    combine: Any,
) -> PerfDecision:
    """Decide a step from its test runs so far (see the module docstring).

    `combine(kinds, reasons, policy)` is the runner's majority rule, used when a run did not
    pass (then the metric does not matter: a crash is a crash)."""
    samples = [t.get("metric") for t in tests]
    record: dict[str, Any] = {
        "samples": [s for s in samples if s is not None],
        "settings": perf.to_dict(),
    }
    if any(k is not Kind.PASS for k in kinds):
        kind, verdict, reason = combine(kinds, [str(t.get("reason")) for t in tests], policy)
        return PerfDecision(kind, verdict, reason, record)
    missing = [i + 1 for i, s in enumerate(samples) if s is None]
    if missing:
        why = (
            f"the test passed but reported no metric in run {missing[0]} of {len(samples)}: "
            f"print a line {METRIC_PREFIX}<float> or write \"metric\" to $TRITONBISECT_RESULT"
        )
        return PerfDecision(Kind.INFRA, policy.verdict(Kind.INFRA), why, record)
    values = [float(s) for s in samples if s is not None]
    if any(v <= 0 for v in values):
        why = f"the test reported a metric <= 0 ({min(values):g}); --regress perf needs a positive time or rate"
        return PerfDecision(Kind.INFRA, policy.verdict(Kind.INFRA), why, record)
    record["median"] = perfstats.median(values)
    if baseline is None:
        record["reference"] = True
        reason = (
            f"reference: median {record['median']:.6g} over {len(values)} samples "
            f"(the yardstick of every other step)"
        )
        return PerfDecision(Kind.PASS, policy.verdict(Kind.PASS), reason, record)
    verdict = perfstats.judge(
        baseline,
        values,
        threshold=perf.threshold,
        alpha=perf.significance,
        higher_is_better=perf.higher_is_better,
    )
    record.update(
        baseline_median=perfstats.median(baseline),
        baseline_n=len(baseline),
        change=verdict.change,
        p_worse=verdict.p_worse,
        p_within=verdict.p_within,
        decision=verdict.decision,
    )
    detail = verdict.describe(higher_is_better=perf.higher_is_better)
    if verdict.decision == perfstats.WORSE:
        reason = f"{perf.what} regression: {detail}, beyond the {perf.threshold * 100:g}% threshold"
        return PerfDecision(Kind.PERF, policy.verdict(Kind.PERF), reason, record)
    if verdict.decision == perfstats.WITHIN:
        reason = f"within the {perf.threshold * 100:g}% threshold: {detail}"
        return PerfDecision(Kind.PASS, policy.verdict(Kind.PASS), reason, record)
    if len(values) < perf.max_samples:
        more = min(perf.samples, perf.max_samples - len(values))
        return PerfDecision(Kind.FLAKY, Verdict.SKIP, f"undecided: {detail}", record, more=more)
    reason = (
        f"flaky: undecided after {len(values)} samples (the bound, --max-samples): {detail}; "
        "the noise is too large for the threshold"
    )
    return PerfDecision(Kind.FLAKY, policy.verdict(Kind.FLAKY), reason, record)


def baseline_of(records: Iterable[Mapping[str, Any]], good: str) -> tuple[float, ...] | None:
    """The reference samples: those of the latest good-endpoint step of `good` that has them."""
    found: tuple[float, ...] | None = None
    for rec in records:
        if rec.get("role") != "endpoint" or rec.get("commit") != good:
            continue
        perf = rec.get("perf") or {}
        if perf.get("reference") and perf.get("samples"):
            found = tuple(float(s) for s in perf["samples"])
    return found


def summary_of(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The metric of a journaled step for reports: median, samples, change vs the reference
    (paired: the change's interval, the statistic that decided and the reference commit)."""
    perf = rec.get("perf")
    if not isinstance(perf, Mapping) or not isinstance(perf.get("samples"), list) or not perf["samples"]:
        return None
    out = {
        "median": _number(perf.get("median")),
        "n": len(perf["samples"]),
        "change": _number(perf.get("change")),
        "reference": bool(perf.get("reference")),
        "decision": perf.get("decision") if isinstance(perf.get("decision"), str) else None,
    }
    if perf.get("design") == PAIRED and not perf.get("reference"):
        out.update(
            paired=True, low=_number(perf.get("low")), high=_number(perf.get("high")),
            method=perf.get("method") if perf.get("method") in ("floor", "paired") else None,
            against=perf.get("reference_commit") if isinstance(perf.get("reference_commit"), str) else None,
            confidence=_number(perf.get("confidence")),
        )
    return out


def _number(value: Any) -> float | None:
    """A journal's number as a finite float (None for anything else: the file may be crafted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def change_text(summary: Mapping[str, Any] | None) -> str:
    """`+6.1% [4.9, 7.2]` of a paired step (`+6.1%` of an unpaired one); "" without one."""
    if not summary or summary.get("change") is None or summary.get("reference"):
        return ""
    text = f"{summary['change'] * 100:+.1f}%"
    if summary.get("paired"):
        low, high = summary.get("low"), summary.get("high")
        text += f" [{'-inf' if low is None else f'{low * 100:.1f}'}, {'inf' if high is None else f'{high * 100:.1f}'}]"
    return text


def format_summary(summary: Mapping[str, Any] | None) -> str:
    """`1.23e-05 (n=5, +30.1%)` for a report's table; a paired step's
    `1.23e-05 (20 pairs, +6.1% [4.9, 7.2] floor)`."""
    if not summary or summary.get("median") is None:
        return "—"
    if summary.get("paired"):
        return f"{summary['median']:.4g} ({summary['n']} pairs, {change_text(summary)} {summary.get('method') or ''})".replace(" )", ")")
    text = f"{summary['median']:.4g} (n={summary['n']}"
    if summary.get("reference"):
        text += ", reference"
    elif summary.get("change") is not None:
        text += f", {summary['change'] * 100:+.1f}%"
    return text + ")"
