"""The first screen's recorded example debates are what the current code runs with the app's defaults:
"Run it live" then replays the card the visitor just saw."""
import dataclasses

import pytest

from r2mad.config import load_config
from r2mad.ui.examples import CARDS, cached, stale


@pytest.mark.parametrize("card", CARDS, ids=[c.id for c in CARDS])
def test_each_card_has_a_finished_recording_the_current_defaults_reproduce(card):
    recorded = cached(card)
    assert recorded is not None, f"{card.id} has no finished recording; run `python -m r2mad.ui.examples`"
    assert stale(card, recorded, load_config()) == [], "re-record with `python -m r2mad.ui.examples`"


def test_a_changed_default_or_prompt_makes_a_recording_stale():
    card, config = CARDS[0], load_config()
    recorded = cached(card)
    other = dataclasses.replace(recorded, settings={**recorded.settings, "temperature": 0.93})
    assert stale(card, other, config) == ["setting temperature"]
    first = recorded.rounds[0]
    turn = dataclasses.replace(first.turns[1], prompt=first.turns[1].prompt[:-1])
    edited = dataclasses.replace(first, turns=(first.turns[0], turn, *first.turns[2:]))
    assert stale(card, dataclasses.replace(recorded, rounds=(edited, *recorded.rounds[1:])), config) == \
        ["agent 2's round-0 prompt"]
