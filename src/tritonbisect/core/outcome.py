"""Outcome kinds, verdicts, the rules between them, and classification of finished processes.

A test's raw exit code never reaches the search or git: every finished process is first
classified into an outcome `Kind`, a `Policy` maps kinds to the `Verdict` the search sees,
and `combine_runs` / `combine_cases` make one verdict of a step's repeated runs (and of each
case they report). Every verdict rule is here; the runner and the session only apply them.
"""

from __future__ import annotations

import json
import re
import signal
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any


class Kind(str, Enum):
    """What happened to a step (a build, a test run, the step)."""

    def __str__(self) -> str:  # as the journal spells it, in a message as in JSON
        return self.value

    PASS = "pass"
    FAIL = "fail"
    CRASH = "crash"
    COMPILE_ERROR = "compile_error"
    MISMATCH = "mismatch"
    TIMEOUT = "timeout"
    PERF = "perf"
    # a compile oracle's --check codegen: a codegen statistic moved past its threshold
    CODEGEN = "codegen"
    BUILD_FAILED = "build_failed"
    INFRA = "infra"
    FLAKY = "flaky"
    # an IR oracle's IR cannot be read by the Triton under test (dialect drift): never bad
    UNREADABLE_IR = "unreadable_ir"
    # it compiles, but the target's driver refuses to launch it (Triton's OutOfResources: more
    # shared memory, threads or registers than a block may have)
    OUT_OF_RESOURCES = "out_of_resources"
    # a person's verdict (--manual, `mark`): no test ran, the policy has no say
    MANUAL = "manual"


class Verdict(str, Enum):
    """What a step says of its commit, as the search takes it."""

    def __str__(self) -> str:
        return self.value

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"
    ABORT = "abort"


# The exit-code protocol of `tritonbisect step` and of every script for `git bisect run`.
EXIT_CODE_OF_VERDICT: Mapping[Verdict, int] = {
    Verdict.GOOD: 0,
    Verdict.BAD: 1,
    Verdict.SKIP: 125,
    Verdict.ABORT: 128,
}

TEST_FAILURE_KINDS = frozenset(
    {Kind.FAIL, Kind.CRASH, Kind.COMPILE_ERROR, Kind.MISMATCH, Kind.TIMEOUT, Kind.PERF, Kind.CODEGEN,
     Kind.OUT_OF_RESOURCES}
)

# "perf": a step is bad when its metric is worse than the good endpoint's (core.perf);
# "compile-time": the same, the metric being the compile oracle's compile time
REGRESS_MODES = ("fail", "crash", "mismatch", "compile_error", "out_of_resources", "fixed", "perf", "compile-time")
METRIC_MODES = ("perf", "compile-time")  # judged from repeated samples of a metric (core.perf)
BUILD_FAILURE_MODES = ("skip", "abort", "bad")


@dataclass
class VerdictSettings:
    """The choices behind a session's Policy, as given: --regress, --on-build-failure,
    --infra-pattern and --no-infra-patterns (the perf options of --regress perf are
    core.perf.PerfOptions)."""

    regress: str = "fail"
    on_build_failure: str = "skip"
    infra_patterns: list[str] = field(default_factory=list)  # --infra-pattern REGEX (repeatable)
    builtin_infra_patterns: bool = True  # False: --no-infra-patterns

    def infra(self) -> InfraRule:
        return InfraRule(tuple(self.infra_patterns), self.builtin_infra_patterns)


# What a failing test prints when the machine, not the commit, failed. Matched in the output
# of a test that did not pass, whatever its exit code (a pass stays a pass): the step is an
# infrastructure failure (retried once, then the session aborts, exit 4).
BUILTIN_INFRA_PATTERNS = (
    "No space left on device", "Cannot allocate memory", "Temporary failure in name resolution",
    "Could not resolve host", "Network is unreachable", r"Connection (?:refused|reset|timed out)",
    "Read-only file system",
)


@dataclass(frozen=True)
class InfraRule:
    """Which lines of a failing test's output make its step an infrastructure failure: the
    built-in patterns (unless --no-infra-patterns) and the user's --infra-pattern regexes."""

    patterns: tuple[str, ...] = ()
    builtin: bool = True

    def __post_init__(self) -> None:
        for pattern in self.patterns:
            check_infra_pattern(pattern)

    def match(self, text: str) -> InfraMatch | None:
        """The first line of `text` (its last part: the output's tail) that a pattern matches."""
        sources = (*(BUILTIN_INFRA_PATTERNS if self.builtin else ()), *self.patterns)
        best: InfraMatch | None = None
        for source in sources:
            found = _compiled(source).search(text)
            if found and (best is None or found.start() < best.start):
                best = InfraMatch(found.start(), _line_of(text, found.start()), found.group(0), source,
                                  source not in self.patterns)
        return best


@dataclass(frozen=True)
class InfraMatch:
    start: int
    line: str  # the line of the output that matched
    text: str  # what the pattern matched in it
    pattern: str
    builtin: bool

    def said(self) -> str:
        """The reason of the step: the line, and the rule that turned it into infrastructure."""
        rule = (f"built-in infra pattern {self.text!r}; a test that prints it on purpose: --no-infra-patterns"
                if self.builtin else f"--infra-pattern {self.pattern!r}")
        return f"infrastructure: the test's output says {self.line!r} ({rule})"


def check_infra_pattern(pattern: str) -> None:
    """ValueError naming the flag when `pattern` is not a usable regular expression."""
    if not pattern:
        raise ValueError("--infra-pattern needs a regular expression, e.g. --infra-pattern 'CUDA driver version is insufficient'")
    try:
        _compiled(pattern)
    except re.error as exc:
        raise ValueError(f"--infra-pattern {pattern!r} is not a regular expression: {exc}") from None


_COMPILED: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    if pattern not in _COMPILED:
        _COMPILED[pattern] = re.compile(pattern)
    return _COMPILED[pattern]


@dataclass(frozen=True)
class Policy:
    """Maps outcome kinds to verdicts.

    `regress` picks which kinds count as the regression:
      fail           every test failure kind is bad (default)
      crash / mismatch / compile_error / out_of_resources / perf / compile-time
                     only that kind is bad (perf: slower than the good endpoint, judged
                     from repeated samples by `core.perf`; compile-time: the same for the
                     compile oracle's compile time, a slow compile being a PERF); a pass is
                     good; other failures are skipped, because they hide whether the narrowed
                     symptom is present (a kernel that does not compile has no compile time)
      fixed          find the commit that fixed it: failures are "good" (the old state),
                     a pass is "bad" (the new state)
    """

    regress: str = "fail"
    on_build_failure: str = "skip"
    mapping: Mapping[Kind, Verdict] = field(default_factory=dict, compare=False)
    # --regress perf: how steps are sampled and judged (a bisect.perf.PerfSettings); it
    # travels with the policy to wherever a step runs
    perf: Any = None
    # which lines of a failing test's output make it an infrastructure failure
    infra: InfraRule = field(default_factory=InfraRule)

    def __post_init__(self) -> None:
        if self.regress not in REGRESS_MODES:
            raise ValueError(f"unknown regress mode {self.regress!r}; choose from {REGRESS_MODES}")
        if self.on_build_failure not in BUILD_FAILURE_MODES:
            raise ValueError(f"unknown build-failure mode {self.on_build_failure!r}")
        if (self.perf is None) != (self.regress not in METRIC_MODES):
            raise ValueError("perf settings go with regress='perf' or 'compile-time', and they need them")
        object.__setattr__(self, "mapping", self._build_mapping())

    def _build_mapping(self) -> dict[Kind, Verdict]:
        m: dict[Kind, Verdict] = {Kind.INFRA: Verdict.ABORT, Kind.FLAKY: Verdict.SKIP,
                                  Kind.UNREADABLE_IR: Verdict.SKIP}
        m[Kind.BUILD_FAILED] = {
            "skip": Verdict.SKIP,
            "abort": Verdict.ABORT,
            "bad": Verdict.BAD,
        }[self.on_build_failure]
        if self.regress == "fail":
            m[Kind.PASS] = Verdict.GOOD
            m.update({k: Verdict.BAD for k in TEST_FAILURE_KINDS})
        elif self.regress == "fixed":
            m[Kind.PASS] = Verdict.BAD
            m.update({k: Verdict.GOOD for k in TEST_FAILURE_KINDS})
        else:
            target = Kind.PERF if self.regress in METRIC_MODES else Kind(self.regress)
            m[Kind.PASS] = Verdict.GOOD
            m.update({k: Verdict.SKIP for k in TEST_FAILURE_KINDS})
            m[target] = Verdict.BAD
        return m

    def verdict(self, kind: Kind) -> Verdict:
        return self.mapping[kind]

    def to_dict(self) -> dict[str, str]:
        return {"regress": self.regress, "on_build_failure": self.on_build_failure}


# --- repeated runs -----------------------------------------------------------------------


def combine_runs(kinds: Sequence[Kind], reasons: Sequence[str], policy: Policy) -> tuple[Kind, Verdict, str]:
    """Majority verdict of repeated runs; disagreeing verdicts make the kind FLAKY."""
    verdicts = [policy.verdict(k) for k in kinds]
    counts = Counter(verdicts)
    if len(counts) == 1:
        # all runs agree: report the most common kind (first among equals)
        kind = Counter(kinds).most_common(1)[0][0]
        reason = reasons[kinds.index(kind)]
        if len(kinds) > 1:
            reason = f"{reason} ({len(kinds)} of {len(kinds)} runs agree)"
        return kind, verdicts[0], reason
    (top, top_n), *rest = counts.most_common()
    majority = top if top_n * 2 > len(verdicts) else Verdict.SKIP
    detail = ", ".join(k.value for k in kinds)
    tally = f"{top_n} of {len(verdicts)} runs {top.value}"
    if majority is Verdict.SKIP:
        reason = f"flaky: runs disagree with no majority ({detail})"
    else:
        reason = f"flaky: {tally} ({detail})"
    return Kind.FLAKY, majority, reason


def combine_cases(tests: Sequence[dict[str, Any]], policy: Policy) -> dict[str, dict[str, str]] | None:
    """Each reported case's kind and verdict over the runs of a step, combined as the
    overall result is (a run that did not report a case says nothing of it). A case's
    infrastructure failure is no verdict on the commit for that case: skip, never abort."""
    runs: dict[str, list[Kind]] = {}
    for test in tests:
        for name, kind in (test.get("cases") or {}).items():
            runs.setdefault(name, []).append(Kind(kind))
    if not runs:
        return None
    out: dict[str, dict[str, str]] = {}
    for name, kinds in runs.items():
        kind, verdict, _ = combine_runs(kinds, [k.value for k in kinds], policy)
        if verdict is Verdict.ABORT:
            verdict = Verdict.SKIP
        out[name] = {"kind": kind.value, "verdict": verdict.value}
    return out


# --- classification -------------------------------------------------------------------

_CRASH_PATTERNS = re.compile(
    r"Segmentation fault|SIGSEGV|Aborted \(core dumped\)|core dumped|"
    r"Assertion [`'\"].*failed|Assertion failed|LLVM ERROR|PLEASE submit a bug report|"
    r"Stack dump:|terminate called after throwing|illegal memory access|"
    r"unspecified launch failure|Fatal Python error"
)
_COMPILE_ERROR_PATTERNS = re.compile(
    r"triton\.compiler\.errors\.\w*Error|CompilationError|MLIRCompilationError|"
    r"error: failed to legalize|PassManager::run failed"
)
# Triton's own launch-time check: the kernel compiled, the device cannot run a block of it
_OUT_OF_RESOURCES_PATTERNS = re.compile(r"OutOfResources: out of resource|triton\.runtime\.errors\.OutOfResources")
# a build's log: the same machine failures (the flags change only what a test's output means)
_INFRA_PATTERNS = re.compile("|".join(BUILTIN_INFRA_PATTERNS))

# The structured result an oracle (or any test) may write to $TRITONBISECT_RESULT.
RESULT_ENV_VAR = "TRITONBISECT_RESULT"
_RESULT_STATUS_TO_KIND = {
    "pass": Kind.PASS,
    "mismatch": Kind.MISMATCH,
    "compile_error": Kind.COMPILE_ERROR,
    "out_of_resources": Kind.OUT_OF_RESOURCES,
    "runtime_error": Kind.CRASH,
    "crash": Kind.CRASH,
    "timeout": Kind.TIMEOUT,
    "perf": Kind.PERF,
    "codegen": Kind.CODEGEN,
    "fail": Kind.FAIL,
    # an IR oracle: this Triton cannot parse the recorded IR (another dialect version)
    "unreadable_ir": Kind.UNREADABLE_IR,
    # triton or torch cannot even be imported: the build under test is broken
    "env_unusable": Kind.BUILD_FAILED,
    # the oracle's own inputs (golden, blobs) are missing: the set-up is broken, not the commit
    "usage_error": Kind.INFRA,
}


def case_kinds(result: Mapping | None) -> dict[str, Kind]:
    """The per-case kinds a test reported beside its overall status: `"cases": {name:
    status}` in its structured result (a replay oracle: one case per kernel). A status the
    tool does not know is left out, as a case the test did not report is."""
    cases = result.get("cases") if result is not None else None
    if not isinstance(cases, Mapping):
        return {}
    out: dict[str, Kind] = {}
    for name, status in cases.items():
        kind = _RESULT_STATUS_TO_KIND.get(status) if isinstance(status, str) else None
        if kind is not None and str(name).strip():
            out[str(name)] = kind
    return out


@dataclass(frozen=True)
class Classification:
    kind: Kind
    reason: str


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def read_result_json(path: Path | None) -> dict | None:
    """The structured result a test wrote, or None when absent or unreadable."""
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def classify_test(
    returncode: int | None,
    output_tail: str = "",
    *,
    timed_out: bool = False,
    result: Mapping | None = None,
    infra: InfraRule | None = None,
) -> Classification:
    """Classify a finished test process.

    `returncode` follows subprocess conventions: negative means killed by that signal.
    A shell reports a child's death by signal as 128+N, which is treated the same way.
    `infra`: which output lines make a failing test an infrastructure failure (default: the
    built-in patterns).
    """
    if timed_out:
        return Classification(Kind.TIMEOUT, "test exceeded its timeout and was killed")
    if returncode is not None and returncode < 0:
        return Classification(Kind.CRASH, f"test killed by {signal_name(-returncode)}")
    if result is not None and isinstance(result.get("status"), str):
        kind = _RESULT_STATUS_TO_KIND.get(result["status"])
        if kind is not None:
            detail = result.get("reason") or result.get("message") or result["status"]
            return Classification(kind, f"test reported {result['status']}: {detail}"[:300])
    if returncode == 0:
        return Classification(Kind.PASS, "test exited 0")
    if returncode is not None and 128 < returncode < 128 + 65 and returncode != 255:
        sig = returncode - 128
        if sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE):
            return Classification(Kind.CRASH, f"test died by {signal_name(sig)} (exit {returncode})")
    crash = _CRASH_PATTERNS.search(output_tail)
    if crash:
        return Classification(Kind.CRASH, f"test crashed: {_line_of(output_tail, crash.start())}")
    out_of_resources = _OUT_OF_RESOURCES_PATTERNS.search(output_tail)
    if out_of_resources:
        return Classification(
            Kind.OUT_OF_RESOURCES, f"out of resources at launch: {_line_of(output_tail, out_of_resources.start())}"
        )
    compile_error = _COMPILE_ERROR_PATTERNS.search(output_tail)
    if compile_error:
        return Classification(
            Kind.COMPILE_ERROR, f"kernel compile error: {_line_of(output_tail, compile_error.start())}"
        )
    matched = (infra or InfraRule()).match(output_tail)
    if matched:
        return Classification(Kind.INFRA, matched.said())
    return Classification(Kind.FAIL, f"test exited {returncode}")


_MISSING_TOOL = re.compile(r"(?:command not found|No such file or directory: '[^']+'|not found in PATH)")


def classify_build(returncode: int | None, log_tail: str = "", *, timed_out: bool = False) -> Classification:
    """Classify a finished build: ok (as PASS), BUILD_FAILED (the commit's fault) or INFRA."""
    if timed_out:
        return Classification(Kind.INFRA, "build exceeded its timeout and was killed")
    if returncode == 0:
        return Classification(Kind.PASS, "build succeeded")
    if returncode is not None and (returncode in (-9, 137)):
        return Classification(Kind.INFRA, "build killed (exit 137/SIGKILL): out of memory?")
    infra = _INFRA_PATTERNS.search(log_tail)
    if infra:
        return Classification(Kind.INFRA, f"infrastructure: {_line_of(log_tail, infra.start())}")
    if returncode == 127 or (_MISSING_TOOL.search(log_tail) and "error:" not in log_tail):
        match = _MISSING_TOOL.search(log_tail)
        where = _line_of(log_tail, match.start()) if match else f"exit {returncode}"
        return Classification(Kind.INFRA, f"missing tool: {where}")
    if returncode is not None and returncode < 0:
        return Classification(Kind.INFRA, f"build killed by {signal_name(-returncode)}")
    return Classification(Kind.BUILD_FAILED, f"build failed (exit {returncode})")


def _line_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end != -1 else len(text)].strip()[:200]
