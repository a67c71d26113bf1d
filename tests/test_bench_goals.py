"""The benchmarks print the host's steal beside their goals (bench/goals.py): a slow figure says why."""

from __future__ import annotations

from bench.goals import _cpu_times, print_goals, stolen


def test_steal_is_the_eighth_field_of_the_cpu_time_between_two_readings() -> None:
    before = [100, 0, 50, 800, 0, 0, 0, 50]
    after = [160, 0, 70, 880, 0, 0, 0, 90]  # 200 ticks passed, 40 of them stolen
    assert stolen(before, after) == 0.2
    assert stolen(before, before) is None  # no time passed: no share
    assert stolen(None, after) is None


def test_the_goals_end_with_the_steal_of_the_run(capsys) -> None:  # type: ignore[no-untyped-def]
    print_goals("goals:", {"status <= 0.5 s": ("0.45 s", True), "show <= 0.5 s": ("0.63 s", False)})
    out = capsys.readouterr().out.splitlines()
    assert out[1].endswith("  met") and out[2].endswith("NOT met")
    if _cpu_times() is not None:  # Linux: /proc/stat is there
        assert "steal:" in out[3]
