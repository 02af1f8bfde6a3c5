"""The harness's pure parts, with no server: the comparison rule, and reading the tcl driver's
output (a sample written here in the driver's line formats, ``support/test.tcl`` and
``test_helper.tcl`` of Redis 7.0.15: ``[ok]: NAME (N ms)``, ``[err]: NAME in tests/UNIT.tcl``
plus the failure's lines, ``[ignore]: NAME: REASON`` or ``[ignore]: REASON``, ``[skip]``)."""

from __future__ import annotations

from redis_suite import parse_output

from .compare import compare_runs

REFERENCE = {"a": "ok", "b": "ok", "c": "err", "d": "ok"}


def test_a_run_compared_with_itself_misses_nothing() -> None:
    comparison = compare_runs(REFERENCE, REFERENCE, passed="ok")
    assert comparison.ok and comparison.missing == {} and comparison.extra == []


def test_a_reference_pass_that_fails_or_is_not_run_on_the_candidate_is_missing() -> None:
    comparison = compare_runs(REFERENCE, {"a": "ok", "b": "err", "c": "err"}, passed="ok")
    assert comparison.missing == {"b": "err", "d": "not run"}
    assert not comparison.ok
    report = comparison.report({"b": "Expected 'x' to equal 'y'"})
    assert "ok on the reference" not in report
    assert "passes on the reference, err on the candidate: b\n    Expected 'x'" in report


def test_an_excused_test_is_not_missing_but_the_excuse_must_stay_needed() -> None:
    candidate = {"a": "ok", "b": "err", "c": "ok", "d": "ok"}
    comparison = compare_runs(REFERENCE, candidate, passed="ok", exclusions={"b": "lists"})
    assert comparison.ok and comparison.excused == {"b": "lists"}
    assert comparison.extra == ["c"]  # the candidate may do better than the reference
    # an excuse for a test the candidate passes, or the reference does not pass, is stale
    stale = compare_runs(
        REFERENCE, candidate, passed="ok", exclusions={"a": "why", "c": "why", "x": "why"}
    )
    assert not stale.ok
    assert stale.stale == {
        "a": "the candidate passes it",
        "c": "the reference does not pass it (err)",
        "x": "the reference does not pass it (not run)",
    }


SAMPLE = """\
[ready]: 4242
Testing unit/type/stream
[ok]: XADD works (with parentheses) (3 ms)
[ignore]: Tag: needs:debug denied
[err]: XREAD blocks in tests/unit/type/stream.tcl
Expected 'a' to equal 'b' (context: ...)
second line of the failure
[1/2 done]: unit/type/stream (1 seconds)
Testing unit/type/stream-cgroups
[ignore]: XGROUP swap: 1: Not supported on external server
[skip]: XACK named out
[ok]: XACK works (0 ms)
[ok]: XACK works (1 ms)
[err]: Connection refused
(procedure "start_server" line 1)
[2/2 done]: unit/type/stream-cgroups (0 seconds)

                   The End

*** [err]: XREAD blocks in tests/unit/type/stream.tcl
Expected 'a' to equal 'b' (context: ...)
"""


def test_the_driver_output_is_read_test_by_test() -> None:
    run = parse_output(SAMPLE)
    assert {name: (t.unit, t.status) for name, t in run.tests.items()} == {
        "XADD works (with parentheses)": ("unit/type/stream", "ok"),
        "XREAD blocks": ("unit/type/stream", "err"),
        "XGROUP swap: 1": ("unit/type/stream-cgroups", "skipped"),
        "XACK named out": ("unit/type/stream-cgroups", "skipped"),
        "XACK works": ("unit/type/stream-cgroups", "ok"),
        "XACK works [2]": ("unit/type/stream-cgroups", "ok"),
    }
    assert run.tests["XADD works (with parentheses)"].ms == 3
    assert run.tests["XREAD blocks"].detail == (
        "Expected 'a' to equal 'b' (context: ...)\nsecond line of the failure"
    )
    assert run.tests["XGROUP swap: 1"].detail == "Not supported on external server"
    assert run.ignored_blocks == ["unit/type/stream: Tag: needs:debug denied"]
    assert run.block_errors == ['Connection refused\n(procedure "start_server" line 1)']
    assert run.counts() == {"ok": 3, "err": 1, "exception": 0, "skipped": 2}
