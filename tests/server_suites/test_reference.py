"""The references -- valkey-server 8.0 in Redis's tcl suite, Redis 8.2.3 in redis-py's: the
numbers measured, and every difference explained.

If one of these fails, the reference moved (another valkey-server, another Redis source or
redis-py release, or a broken harness): measure again and update ``expectations.py`` and
``docs/server.md#test-suites`` together.
"""

from __future__ import annotations

from collections import Counter

import pytest
from redispy_suite import PROTOCOLS

from .conftest import SuiteRuns
from .expectations import (
    REDIS8_REDISPY_PASSED,
    REDIS8_REDISPY_SELECTED,
    REDIS8_REDISPY_SKIPPED,
    RSTORE_REDISPY_EXCLUSIONS,
    RSTORE_TCL_EXCLUSIONS,
    VALKEY_TCL_ERR,
    VALKEY_TCL_IGNORED_BLOCKS,
    VALKEY_TCL_OK,
    VALKEY_TCL_SKIPPED,
)

pytestmark = pytest.mark.server_suite


def test_valkey_passes_the_tcl_suite_but_for_four_version_differences(
    reference_runs: SuiteRuns,
) -> None:
    run = reference_runs.tcl
    assert not run.timed_out and run.block_errors == [], run.output[-3000:]
    assert run.names("exception") == set(), run.output[-3000:]
    assert run.names("err") == VALKEY_TCL_ERR.keys()
    for name, code in VALKEY_TCL_ERR.items():
        # valkey's error, where the test wants Redis 7.0's "... no longer exists"
        assert f"Expected '{code} " in run.tests[name].detail, run.tests[name].detail
        assert "to match '*no longer exists*'" in run.tests[name].detail
    assert {name: run.tests[name].detail for name in run.names("skipped")} == VALKEY_TCL_SKIPPED
    assert Counter(run.ignored_blocks) == VALKEY_TCL_IGNORED_BLOCKS
    assert len(run.names("ok")) == VALKEY_TCL_OK
    assert run.returncode == 1  # the driver's verdict: some tests failed


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_redis8_passes_every_redispy_stream_test_it_selects(
    reference_runs: SuiteRuns, protocol: int
) -> None:
    run = reference_runs.redispy[protocol]
    assert len(run.outcomes) == REDIS8_REDISPY_SELECTED, run.output[-3000:]
    assert all(name.split("::")[-1].startswith("test_x") for name in run.outcomes)
    assert run.names("failed") == set(), run.output[-3000:]
    assert len(run.names("passed")) == REDIS8_REDISPY_PASSED
    skipped = run.names("skipped")
    assert len(skipped) == REDIS8_REDISPY_SKIPPED
    assert all(run.details[name].startswith("Redis version required ") for name in skipped)
    # RESP3 and RESP2 select, skip and fail the same tests
    assert run.outcomes == reference_runs.redispy[PROTOCOLS[0]].outcomes


def test_rstore_exclusions_name_tests_the_reference_passes(reference_runs: SuiteRuns) -> None:
    """Each test rstore is excused from exists and passes on its reference: an excuse for a
    test that was renamed, or that the reference fails anyway, would hide nothing and mislead
    readers."""
    tcl_ok = reference_runs.tcl.names("ok")
    assert set(RSTORE_TCL_EXCLUSIONS) <= tcl_ok, set(RSTORE_TCL_EXCLUSIONS) - tcl_ok
    for run in reference_runs.redispy.values():
        assert set(RSTORE_REDISPY_EXCLUSIONS) <= run.names("passed")
