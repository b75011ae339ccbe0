"""The first screen's recorded example debates are what the current code runs with the app's defaults:
"Run it live" then replays the card the visitor just saw."""
import dataclasses
import json

import pytest

from r2mad.backends.embedded import smollm2_path
from r2mad.settings.config import load_config
from r2mad.ui.examples import CACHE, CARDS, cached, model_build, recording_build, stale


@pytest.mark.parametrize("card", CARDS, ids=[c.id for c in CARDS])
def test_each_card_has_a_finished_recording_the_current_defaults_and_build_reproduce(card):
    recorded = cached(card)
    assert recorded is not None, f"{card.id} has no finished recording; run `python -m r2mad.ui.examples`"
    assert recording_build(card) == model_build(), "recorded on another build of the embedded model"
    assert stale(card, recorded, load_config(), recording_build(card)) == [], \
        "re-record with `python -m r2mad.ui.examples`"


def test_a_recording_of_another_model_build_is_stale():
    card = CARDS[0]
    why = stale(card, cached(card), load_config(), "llama-cpp-python 0.2.90, SmolLM2-135M-Instruct.Q4_1.gguf")
    assert why == [f"model build (recorded on llama-cpp-python 0.2.90, SmolLM2-135M-Instruct.Q4_1.gguf; this is "
                   f"{model_build()})"]


@pytest.mark.slow  # one card's debate on the embedded model, as "Run it live" runs it
@pytest.mark.parametrize("card", CARDS[:1], ids=[c.id for c in CARDS[:1]])
def test_a_card_replays_live_with_seed_0_as_recorded(card):
    import asyncio

    from r2mad.ui.examples import record

    recorded, live = cached(card), asyncio.run(record(card, load_config()))
    answers = lambda t: [[turn.answer.value for turn in r.turns] for r in t.rounds]  # noqa: E731
    assert answers(live) == answers(recorded) and live.final == recorded.final
    assert live.usage().calls == recorded.usage().calls
    assert [turn.text for r in live.rounds for turn in r.turns] == \
        [turn.text for r in recorded.rounds for turn in r.turns]


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


@pytest.mark.parametrize("card", CARDS, ids=[c.id for c in CARDS])
def test_each_recording_keeps_the_model_it_used_and_its_card_says_it(card):
    from r2mad.ui.examples import card_task, recording_model

    data = json.loads((CACHE / f"{card.id}.json").read_text(encoding="utf-8"))
    assert data["recorded_with"]["backbone"] == data["backbone"] == "smollm2-135m"
    assert data["recorded_with"]["served"] == smollm2_path().name  # the file the embedded model loads
    assert data["recorded_with"]["build"] == model_build()
    assert card.label(card_task(card), recording_model(card)).endswith("\nRecorded on SmolLM2-135M-Instruct")


@pytest.mark.slow  # four debates on the scripted server, the R²-MAD card's bank with its real embedder
def test_the_examples_are_recorded_on_any_backbone_named(config_dir, server, tmp_path, capsys):
    from r2mad.ui.examples import main, recording_model

    out = tmp_path / "examples"
    main(["--backbone", "fake", "--config", str(config_dir), "--out", str(out)])
    for card in CARDS:
        recorded = cached(card, out)
        assert recorded is not None and recorded.backbone == "fake"
        kept = json.loads((out / f"{card.id}.json").read_text(encoding="utf-8"))["recorded_with"]
        assert kept == {"backbone": "fake", "model": "fake", "served": "fake-model"}
        assert recording_model(card, out) == "fake"
    assert server.hits >= 4 * 3  # every card's agents answered there
    main(["--backbone", "fake", "--config", str(config_dir), "--out", str(out)])  # current: nothing is run again
    assert capsys.readouterr().out.count("current (fake), kept") == len(CARDS)
    with pytest.raises(SystemExit, match="Unknown backbone 'nope'"):
        main(["--backbone", "nope", "--config", str(config_dir), "--out", str(out)])
