"""Pacing (rstore.PaceSchedule, rstore.Pacer) on a fake clock: due times anchored to the first
entry, sleeps that overshoot (or wake early) never moving later entries, idle gaps capped
without drift, a fixed rate, top speed."""

from __future__ import annotations

import random

import pytest

from rstore import Pacer, PaceSchedule, parse_duration, parse_rate, parse_speed


class FakeClock:
    """A monotonic clock in seconds whose sleeps last ``d + error()``: ``error`` returns the
    overshoot (positive) or undershoot (negative) of each sleep."""

    def __init__(self, error: float | None = None, seed: int = 1) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.rng = random.Random(seed)
        self.error = error

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0, "the pacer asked for a sleep of no time"
        self.sleeps.append(seconds)
        extra = 0.0 if self.error is None else self.rng.uniform(0.0, self.error)
        self.now += seconds + extra

    def pacer(self, schedule: PaceSchedule) -> Pacer:
        return Pacer(schedule, clock=self.clock, sleep=self.sleep, spin=0.0)


def _release_times(clock: FakeClock, schedule: PaceSchedule, ms: list[int]) -> list[float]:
    pacer = clock.pacer(schedule)
    out = []
    for value in ms:
        pacer.wait(value)
        out.append(clock.now)
    return out


def _gaps(n: int, seed: int = 7) -> list[int]:
    """ID times (ms) of ``n`` entries with irregular gaps, bursts of equal ms included."""
    rng = random.Random(seed)
    ms = [1_700_000_000_000]
    for _ in range(n - 1):
        ms.append(ms[-1] + rng.choice([0, 0, 1, 2, 3, 5, 17, 40, 250]))
    return ms


@pytest.mark.parametrize("speed", [1.0, 10.0, 0.5])
def test_each_entry_is_due_at_its_original_offset_from_the_first(speed: float) -> None:
    ms = _gaps(500)
    clock = FakeClock()
    start = clock.now
    released = _release_times(clock, PaceSchedule(speed), ms)
    for at, value in zip(released, ms, strict=True):
        assert at == pytest.approx(start + (value - ms[0]) / 1000 / speed, abs=1e-9)


def test_overshooting_sleeps_do_not_accumulate() -> None:
    """Every sleep overshoots by up to 2 ms, at random: each entry is still released at most
    2 ms after its due time, the 10,000th as much as the first (a schedule that added up gaps
    would be seconds late by then)."""
    ms = _gaps(10_000)
    clock = FakeClock(error=0.002)
    start = clock.now
    pacer = clock.pacer(PaceSchedule(1.0))
    lags = []
    for value in ms:
        lags.append(pacer.wait(value))
        due = start + (value - ms[0]) / 1000
        assert due <= clock.now <= due + 0.002 + 1e-9
    assert max(lags) <= 0.002 + 1e-9
    assert pacer.max_lag == max(lags) and pacer.count == len(ms)
    assert pacer.mean_lag == pytest.approx(sum(lags) / len(lags))
    first, last = lags[:1000], lags[-1000:]
    assert abs(sum(last) / 1000 - sum(first) / 1000) < 0.0005  # no drift
    assert len(clock.sleeps) > 1000  # the gaps were really slept


def test_a_sleep_that_wakes_early_is_slept_again() -> None:
    """A sleep cut short (a signal) wakes before the entry is due: the pacer sleeps the rest."""
    clock = FakeClock()
    asked: list[float] = []

    def interrupted_sleep(seconds: float) -> None:
        asked.append(seconds)
        clock.now += seconds / 4 if len(asked) == 1 else seconds

    pacer = Pacer(PaceSchedule(1.0), clock=clock.clock, sleep=interrupted_sleep, spin=0.0)
    start = clock.now
    pacer.wait(5_000)
    pacer.wait(6_000)
    assert clock.now == pytest.approx(start + 1.0)  # never released early, nor late
    assert asked == pytest.approx([1.0, 0.75])
    assert pacer.last_lag == pytest.approx(0.0)


def test_idle_gaps_are_capped_and_the_anchor_moves_by_the_cut_only() -> None:
    """With max_gap 5 s at 2x: a 60 s gap of the original (30 s of replay) waits 5 s; the
    entries after it keep their original spacing from there, and overshooting sleeps still do
    not add up."""
    ms = [0, 1_000, 61_000, 61_500, 62_000, 200_000, 200_010]
    # replay offsets at 2x: 0, 0.5, then 0.5 + 5 (capped), +0.25, +0.25, +5 (capped), +0.005
    want = [0.0, 0.5, 5.5, 5.75, 6.0, 11.0, 11.005]
    clock = FakeClock()
    start = clock.now
    released = _release_times(clock, PaceSchedule(2.0, max_gap=5.0), ms)
    assert [t - start for t in released] == pytest.approx(want)

    ms = _gaps(5000, seed=3)
    ms = [v + 10_000 * (i // 100) for i, v in enumerate(ms)]  # a 10 s pause every 100 entries
    noisy = FakeClock(error=0.003)
    schedule = PaceSchedule(1.0, max_gap=0.1)
    pacer = noisy.pacer(schedule)
    reference = PaceSchedule(1.0, max_gap=0.1)
    start = noisy.now
    for value in ms:
        pacer.wait(value)
        due = reference.due(value)
        assert due is not None
        assert start + due <= noisy.now <= start + due + 0.003 + 1e-9
    assert noisy.now - start < (ms[-1] - ms[0]) / 1000 - 40 * 9.9  # the pauses were cut


def test_a_fixed_rate_ignores_the_ids() -> None:
    clock = FakeClock(error=0.001)
    start = clock.now
    released = _release_times(clock, PaceSchedule(rate=500.0), [5, 5, 1, 10**12, 7] * 200)
    for i, at in enumerate(released):
        assert start + i / 500 <= at <= start + i / 500 + 0.001 + 1e-9


def test_top_speed_never_waits_nor_reads_the_clock() -> None:
    def no_clock() -> float:
        raise AssertionError("read the clock")

    def no_sleep(seconds: float) -> None:
        raise AssertionError("slept")

    pacer = Pacer(PaceSchedule(), clock=no_clock, sleep=no_sleep)
    assert [pacer.wait(v) for v in (10, 1, 10**9)] == [0.0, 0.0, 0.0]
    assert not PaceSchedule().paced and PaceSchedule(1.0).paced
    assert pacer.count == 3 and pacer.max_lag == 0.0


class LateTimerClock(FakeClock):
    """A clock whose every read costs ``tick`` seconds, and whose sleeps of more than nothing
    wake up to ``late`` seconds after they should (a kernel timer); ``sleep(0)`` only yields,
    and is counted."""

    def __init__(self, late: float, tick: float = 1e-6) -> None:
        super().__init__()
        self.late = late
        self.tick = tick
        self.yields = 0

    def clock(self) -> float:
        self.now += self.tick
        return self.now

    def sleep(self, seconds: float) -> None:
        if seconds == 0:
            self.yields += 1
            return
        self.now += seconds + self.rng.uniform(0.0, self.late)


@pytest.mark.parametrize("spin", [0.0, 0.001, 0.004])
def test_spinning_the_last_part_of_a_wait_hides_late_timer_wake_ups(spin: float) -> None:
    """Sleeps that wake up to 3 ms late: slept through, the lag reaches them; with the last
    ``spin`` seconds polled, a late wake-up costs lag only by what it overshoots the spin."""
    clock = LateTimerClock(late=0.003)
    pacer = Pacer(PaceSchedule(1.0), clock=clock.clock, sleep=clock.sleep, spin=spin)
    lags = [pacer.wait(value) for value in range(0, 20_000, 20)]  # 20 ms apart
    assert min(lags) >= 0.0
    if spin == 0.0:
        assert clock.yields == 0 and pacer.max_lag > 0.002
    else:
        assert clock.yields > 0
        assert pacer.max_lag <= max(0.0, 0.003 - spin) + 1e-5
        assert sum(lag > 1e-5 for lag in lags) <= len(lags) * max(0.0, 0.003 - spin) / 0.003 + 50


def test_an_older_entry_is_due_with_the_one_before() -> None:
    """Streams replayed one after another: the second stream's IDs restart lower."""
    schedule = PaceSchedule(1.0)
    assert [schedule.due(v) for v in (1000, 3000, 500, 1500, 1500)] == pytest.approx(
        [0.0, 2.0, 2.0, 3.0, 3.0]
    )


def test_a_slow_target_shows_as_lag_and_the_schedule_catches_up() -> None:
    """When delivering takes longer than the gaps, entries go out as fast as they can (lag
    grows) and no later due time moves: once the gaps widen, the replay is back on time."""
    clock = FakeClock()
    pacer = clock.pacer(PaceSchedule(1.0))
    start = clock.now
    lags = []
    for value in [0, 10, 20, 30, 40, 2_000]:
        lags.append(pacer.wait(value))
        clock.now += 0.050  # delivering takes 50 ms
    assert lags[:5] == pytest.approx([0.0, 0.040, 0.080, 0.120, 0.160])
    assert lags[5] == pytest.approx(0.0)  # back on schedule, at start + 2 s
    assert clock.now == pytest.approx(start + 2.0 + 0.050)


def test_bad_settings_are_refused() -> None:
    for kwargs in (
        {"speed": 0.0},
        {"speed": -1.0},
        {"speed": float("inf")},
        {"speed": float("nan")},
        {"rate": 0.0},
        {"rate": 10.0, "speed": 1.0},
        {"rate": 10.0, "max_gap": 1.0},
        {"max_gap": 1.0},
        {"speed": 1.0, "max_gap": -1.0},
    ):
        with pytest.raises(ValueError):
            PaceSchedule(**kwargs)  # type: ignore[arg-type]


def test_command_line_values() -> None:
    assert [parse_speed(t) for t in ("10", "0.5", "2x", ".25")] == [10.0, 0.5, 2.0, 0.25]
    assert [parse_duration(t) for t in ("5s", "250ms", "1.5m", "2h", "3")] == pytest.approx(
        [5.0, 0.25, 90.0, 7200.0, 3.0]
    )
    assert [parse_rate(t) for t in ("500/s", "30/m", "3600/h", "20")] == pytest.approx(
        [500.0, 0.5, 1.0, 20.0]
    )
    for parse, text in (
        (parse_speed, "0"),
        (parse_speed, "fast"),
        (parse_duration, "5 parsecs"),
        (parse_duration, "-1s"),
        (parse_rate, "0/s"),
        (parse_rate, "10/d"),
    ):
        with pytest.raises(ValueError, match="is not a"):
            parse(text)
