"""A test's cases as the journal holds them: reading them from a result, combining repeated
runs per case, a record as one case sees it, and which cases the endpoints bracket. Plain
records in, plain data out."""

from __future__ import annotations

from tritonbisect.core.outcome import Kind, Policy, case_kinds, combine_cases
from tritonbisect.session.case_evidence import (
    case_evidence,
    case_tests,
    case_verdicts,
    case_view,
    split_cases,
)


def _step(seq: int, commit: str, role: str, cases: dict[str, str] | None, *, verdict: str = "bad",
          kind: str = "mismatch", tests: bool = True) -> dict:
    rec = {"seq": seq, "phase": "main", "role": role, "commit": commit, "verdict": verdict, "kind": kind,
           "tests": [{"kind": kind}] if tests else []}
    if cases is not None:
        rec["cases"] = {name: {"kind": k, "verdict": "good" if k == "pass" else "bad"} for name, k in cases.items()}
    return rec


def test_case_statuses_are_read_as_kinds_and_unknown_ones_left_out() -> None:
    result = {"status": "mismatch", "cases": {"a": "pass", "b": "mismatch", "c": "runtime_error", "d": "odd", "": "fail"}}
    assert case_kinds(result) == {"a": Kind.PASS, "b": Kind.MISMATCH, "c": Kind.CRASH}
    assert case_kinds({"status": "pass"}) == {} and case_kinds(None) == {} and case_kinds({"cases": [1]}) == {}


def test_repeated_runs_are_combined_per_case() -> None:
    policy = Policy()
    runs = [{"cases": {"a": "pass", "b": "mismatch", "c": "pass"}},
            {"cases": {"a": "pass", "b": "pass", "c": "pass"}},
            {"cases": {"a": "pass", "b": "mismatch"}},  # c not reported: says nothing of c
            {}]  # a run that reported no case at all
    combined = combine_cases(runs, policy)
    assert combined == {"a": {"kind": "pass", "verdict": "good"}, "b": {"kind": "flaky", "verdict": "bad"},
                        "c": {"kind": "pass", "verdict": "good"}}
    assert combine_cases([{}, {}], policy) is None
    # a case's infrastructure failure is no verdict on the commit: skip, never abort
    assert combine_cases([{"cases": {"a": "infra"}}], policy) == {"a": {"kind": "infra", "verdict": "skip"}}
    # --regress crash: the policy maps each case's kind as it maps the overall one
    assert combine_cases([{"cases": {"a": "crash", "b": "mismatch"}}], Policy(regress="crash")) == {
        "a": {"kind": "crash", "verdict": "bad"}, "b": {"kind": "mismatch", "verdict": "skip"}}


def test_a_record_as_one_case_sees_it() -> None:
    rec = _step(3, "x", "search", {"a": "pass"})
    assert case_view(rec, "a")["verdict"] == "good"
    assert case_view(rec, "b")["verdict"] == "skip"  # the test ran and did not report b
    broken = _step(4, "y", "search", None, verdict="skip", kind="build_failed", tests=False)
    assert case_view(broken, "a")["verdict"] == "skip"  # no test ran: the build failure, for every case
    bad_build = _step(5, "z", "search", None, verdict="bad", kind="build_failed", tests=False)
    assert case_view(bad_build, "a")["verdict"] == "bad"  # --on-build-failure bad holds for every case
    crashed = _step(6, "w", "search", None, verdict="bad", kind="crash")
    assert case_view(crashed, "a")["verdict"] == "skip"  # the test died before reporting any case
    mark = {"seq": 7, "phase": "main", "role": "mark", "commit": "x", "verdict": "bad"}
    assert case_view(mark, "a") == mark


def test_marks_and_undos_apply_to_every_case() -> None:
    recs = [_step(1, "x", "search", {"a": "pass", "b": "mismatch"}),
            {"seq": 2, "phase": "main", "role": "mark", "commit": "x", "verdict": "skip"}]
    verdicts = case_verdicts(recs, ["a", "b"], ["x"])
    assert verdicts == {"a": {"x": "skip"}, "b": {"x": "skip"}}
    recs.append({"seq": 3, "phase": "main", "role": "undo", "undoes": 2})
    assert case_verdicts(recs, ["a", "b"], ["x"]) == {"a": {"x": "good"}, "b": {"x": "bad"}}
    recs.append({"seq": 4, "phase": "main", "role": "undo", "undoes": 1})
    assert case_verdicts(recs, ["a", "b"], ["x"]) == {"a": {}, "b": {}}
    assert case_tests(recs, "a") == 0 and case_evidence(recs, "b").counts == {}


def test_the_endpoints_split_the_cases() -> None:
    recs = [_step(1, "good", "endpoint", {"a": "pass", "b": "pass", "c": "mismatch", "d": "pass"}),
            _step(2, "bad", "endpoint", {"a": "mismatch", "b": "pass", "c": "mismatch", "d": "mismatch", "e": "crash"})]
    split = split_cases(recs, "good", "bad")
    assert split is not None
    assert split.regressed == ["a", "d"]
    assert split.not_regressed == ["b"]
    assert split.left_out == {"c": "already mismatch at the good commit", "e": "not reported at the good commit"}
    # the bad endpoint reported no case: one answer, as every test without cases
    assert split_cases([_step(1, "good", "endpoint", {"a": "pass"}), _step(2, "bad", "endpoint", None)],
                       "good", "bad") is None
