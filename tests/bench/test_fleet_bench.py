"""`bench --prefix` and `bench --scale` run in their quickest form through the real router and print their
figures; with debate affinity every debate's calls stay on one replica, and its replica serves from its cache
at least what the debate's own earlier calls could give (the shares are read, not timed)."""
from __future__ import annotations

import re

import pytest

from r2mad.cli import main

pytestmark = pytest.mark.slow  # a real router and replica processes


def table(capsys, *flags: str) -> list[list[str]]:
    code = main(["bench", *flags, "--quick"])
    out = capsys.readouterr().out
    assert code == 0, out
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if "  " in line.strip()]


def percent(cell: str) -> float:
    return float(cell.rstrip("%"))


def test_bench_prefix_prints_each_method_and_affinity_serves_at_least_the_debates_own_prefixes(capsys):
    rows = {r[0]: r for r in table(capsys, "--prefix")[1:]}
    assert {"cot", "sc", "mad", "madm2-subjective", "truemad", "r2mad"} <= set(rows)
    for method in ("sc", "mad", "madm2-subjective", "truemad", "r2mad"):
        calls, on_one, most, served, round_robin = rows[method][1:]
        assert float(calls) > 1 and on_one == "100.0%"
        assert 0 < percent(most) <= percent(served) <= 100 and 0 <= percent(round_robin) <= 100
    assert rows["cot"][3] == "0.0%"  # one call per debate: nothing earlier to reuse


def test_bench_scale_prints_debates_per_hour_per_fleet_and_the_driver_ceiling(capsys):
    rows = table(capsys, "--scale")
    fleets = [r for r in rows if re.match(r"\d+ replicas?: debates per hour", r[0])]
    assert [r[0].split(":")[0] for r in fleets] == ["1 replica", "2 replicas"]
    assert all(float(r[1]) > 0 for r in fleets) and fleets[0][2] == "1.0"
    assert "failed" not in " ".join(r[0] for r in fleets)
    [ceiling] = [r for r in rows if r[0].startswith("driver ceiling")]
    assert float(ceiling[1]) > 0
