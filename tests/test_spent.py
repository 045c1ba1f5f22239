"""Where an evaluation's time goes (ledger/spent.py): steps counted once, under the innermost kind,
and the server's share what is left of the whole. Sleeps stand for work; the assertions hold for
any machine speed (only that nested time is not counted twice)."""

from __future__ import annotations

import time

from kernel_mcp.ledger import spent


def test_a_step_inside_another_counts_once_under_its_own_kind():
    with spent.tally() as used:
        with spent.timing("benchmark runs", count=True):
            time.sleep(0.02)
            with spent.timing("git"):
                time.sleep(0.02)
    assert used.counts == {"benchmark runs": 1}
    assert used.seconds["git"] >= 0.02
    assert used.seconds["benchmark runs"] >= 0.02
    assert sum(used.seconds.values()) <= used.total_s
    assert used.statement().startswith("time: ") and "server" in used.statement()


def test_outside_a_tally_timing_records_nothing_and_a_closed_tally_merges_into_the_open_one():
    with spent.timing("git"):
        pass
    assert spent.so_far() is None
    with spent.tally():
        with spent.timing("git"):
            pass
        with spent.tally() as inner:
            with spent.timing("builds", count=True):
                pass
        merged = spent.so_far(inner)
    assert merged is not None and set(merged.seconds) == {"git", "builds"} and merged.counts == {"builds": 1}
