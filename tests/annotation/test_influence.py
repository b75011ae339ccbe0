"""Who moved whom, two runs round against round, and the influence graph's markup, on hand-made debates."""
from __future__ import annotations

from r2mad.annotation.influence import Move, compare_rows, edge_counts, moves
from r2mad.ui.render.annotate_view import influence_svg
from tests.helpers import grid_debate as debate


def test_moves_point_from_the_holders_of_the_adopted_answer():
    # round 1: agent 1 takes B (held by agents 2 and 3 at round 0); agent 3 takes C (held by no one)
    # round 2: agent 2 takes A (no one held A at round 1) -> no edge; agent 3 goes back to B, held by
    # agents 1 and 2 at round 1 -> two edges
    t = debate([["A", "B", "B"], ["B", "B", "C"], ["B", "A", "B"]])
    assert moves(t) == [Move(1, 1, 0, "B"), Move(1, 2, 0, "B"), Move(2, 0, 2, "B"), Move(2, 1, 2, "B")]
    assert edge_counts(t) == {(1, 0): 1, (2, 0): 1, (0, 2): 1, (1, 2): 1}
    # agent 1 leaves A for B, which no one held: no edge; agent 2 goes from UNPARSED to agent 1's A
    assert moves(debate([["A", None], ["B", "A"]])) == [Move(1, 0, 1, "A")]
    assert moves(debate([[None, "B"], ["B", None]])) == [Move(1, 1, 0, "B")]  # UNPARSED holds nothing


def test_compare_rows_round_against_round():
    a = debate([["A", "B", "B"], ["B", "B", "B"]])
    b = debate([["A", "B", "B"], ["A", "A", "B"], ["A", "A", "A"]])
    assert compare_rows(a, b) == [["0", "A B B", "0.00", "A B B", "0.00"],
                                  ["1", "B B B", "0.00", "A A B", "0.00"],
                                  ["2", "—", "—", "A A A", "0.00"],
                                  ["final", "B", "wrong", "A", "correct"]]


def test_influence_svg_draws_one_arrow_per_edge_and_escapes_the_title():
    svg = influence_svg({(1, 0): 2, (0, 2): 1}, 3, 'mad" onload="x')
    assert svg.count('class="move"') == 2 and 'data-from="2" data-to="1"' in svg
    assert 'stroke-width="3"' in svg  # 1 + twice
    assert svg.count("<circle") == 3 and 'onload="x' not in svg and "&quot;" in svg
