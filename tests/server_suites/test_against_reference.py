"""Each candidate server passes every test of both suites that the reference passes in the same
session -- valkey-server 8.0 for Redis's tcl suite, Redis 8.2.3 for redis-py's -- except the
tests it is excused from (``servers.CANDIDATES``, with reasons)."""

from __future__ import annotations

from collections import Counter

import pytest
from redispy_suite import PROTOCOLS

from .compare import compare_runs
from .conftest import SuiteRuns
from .servers import ServerFactory

pytestmark = pytest.mark.server_suite


def test_redis_tcl_suite_passes_where_valkey_passes(
    reference_runs: SuiteRuns, candidate_runs: SuiteRuns, candidate: ServerFactory
) -> None:
    reference, run = reference_runs.tcl, candidate_runs.tcl
    assert not run.timed_out, f"the suite did not finish:\n{run.output[-3000:]}"
    assert run.block_errors == [], "\n\n".join(run.block_errors)
    # the same tests are selected: the tags decide, not the server
    assert run.names("skipped") - set(candidate.tcl_skips) == reference.names("skipped")
    assert Counter(run.ignored_blocks) == Counter(reference.ignored_blocks)
    comparison = compare_runs(
        {name: test.status for name, test in reference.tests.items()},
        {name: test.status for name, test in run.tests.items()},
        passed="ok",
        exclusions=candidate.tcl_exclusions,
    )
    details = {name: test.detail for name, test in run.tests.items()}
    assert comparison.ok, comparison.report(details)
    print(f"\n{candidate.name}: {run.summary()}; valkey: {reference.summary()}")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_redispy_stream_tests_pass_where_redis_passes(
    reference_runs: SuiteRuns,
    candidate_runs: SuiteRuns,
    candidate: ServerFactory,
    protocol: int,
) -> None:
    reference, run = reference_runs.redispy[protocol], candidate_runs.redispy[protocol]
    # the version the server reports decides what is skipped: rstore reports a newer one
    # (rstore.REDIS_VERSION), whose tests Redis 8.2.3 skips and rstore must pass
    assert run.names("skipped") <= reference.names("skipped")
    newer = reference.names("skipped") - run.names("skipped")
    failed_newer = {
        name: run.outcomes.get(name) for name in newer if run.outcomes.get(name) != "passed"
    }
    assert failed_newer == {}, {name: run.details.get(name) for name in failed_newer}
    comparison = compare_runs(
        reference.outcomes,
        run.outcomes,
        passed="passed",
        exclusions=candidate.redispy_exclusions,
    )
    assert comparison.ok, comparison.report(run.details)
    print(f"\n{candidate.name}: {run.summary()}; Redis 8.2.3: {reference.summary()}")
