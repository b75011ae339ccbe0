"""A person in the debate (r2mad/human.py): a moderator note between rounds reaches every agent's (or one
agent's) next prompt and is recorded; a seat makes one agent's turn the person's text with no model call; both
survive the JSON round trip and the run store, and a fork from the run says them again. The loop's logic on a
scripted backend; the CLI on a real loopback server; the app in Chromium (test_browser_human.py)."""
import asyncio
import dataclasses
import re
from pathlib import Path

import pytest

from r2mad.debate import Debate
from r2mad.human import NOTE_CHARS, Interjection, parse, recorded, scripted
from r2mad.methods import make_method
from r2mad.runs.store import RunStore
from r2mad.steer.fork import ForkSpec
from r2mad.types import Transcript
from tests.helpers import FORK_SETTINGS, PLANET_MCQ, fork, fork_replies, save_run
from tests.scripted import ScriptedBackend

NOTE = "Jupiter is a gas giant; check the sizes again."


def debate(*said, method="mad"):
    backend = ScriptedBackend(fork_replies)
    t = asyncio.run(Debate(backend, make_method(method, FORK_SETTINGS),
                           moderator=scripted(said)).run(PLANET_MCQ))
    return t, backend


def prompt_text(turn) -> str:
    return "\n".join(m.content for m in turn.prompt)


def test_a_note_after_round_0_is_in_every_agents_round_1_prompt_and_recorded():
    t, backend = debate(Interjection(1, NOTE))
    assert all(NOTE in prompt_text(turn) for turn in t.rounds[1].turns)
    assert not any(NOTE in prompt_text(turn) for turn in t.rounds[0].turns)
    [note] = [c for c in t.rounds[1].aux if c.kind == "human"]
    assert (note.text, note.target, note.label, note.tokens_in) == (NOTE, None, "note", 0)
    assert t.usage().calls == len(backend.calls) == 9  # a note is no model call


def test_a_note_to_agent_2_reaches_agent_2_alone():
    t, _ = debate(parse(f"@2 {NOTE}", 1, 3))
    assert [NOTE in prompt_text(turn) for turn in t.rounds[1].turns] == [False, True, False]
    assert "to you alone" in prompt_text(t.rounds[1].turns[1])


def test_a_seat_makes_one_agents_turn_the_persons_text_with_no_model_call():
    t, backend = debate(parse("seat 3: I checked: Jupiter is the largest. ((B))", 1, 3))
    seated = t.rounds[1].turns[2]
    assert seated.text == "I checked: Jupiter is the largest. ((B))" and seated.answer.value == "B"
    assert seated.details["human"] is True and seated.tokens_in == seated.tokens_out == 0
    assert len(backend.calls) == 8 and t.usage().calls == 8  # 3 + 2 + 3: the seat made none
    assert "I checked: Jupiter" in prompt_text(t.rounds[2].turns[0])  # the peers read it as a turn
    again = Transcript.from_json(t.to_json())
    assert again == t and recorded(again.rounds) == [Interjection(1, "I checked: Jupiter is the largest. ((B))",
                                                                  seat=2)]


def test_the_run_store_keeps_the_human_turn_and_a_fork_says_it_again(tmp_path):
    t, _ = debate(Interjection(1, NOTE), parse("@1 Agent 1, explain the size.", 2, 3))
    with RunStore(tmp_path / "runs.sqlite") as store:
        loaded = store.get_run(save_run(store, t)).transcript
    assert loaded == t
    f, _ = fork(loaded, ForkSpec(1))  # from round 1: rounds 0 replayed, the note said again before round 1
    assert all(NOTE in prompt_text(turn) for turn in f.rounds[1].turns)
    assert "Agent 1, explain the size." in prompt_text(f.rounds[2].turns[0])
    assert [c.text for r in f.rounds for c in r.aux if c.kind == "human"] == [NOTE, "Agent 1, explain the size."]
    g, _ = fork(loaded, ForkSpec(2))  # from round 2: round 1 with its note replayed as recorded
    assert (g.rounds[1].turns, g.rounds[1].aux) == (loaded.rounds[1].turns, loaded.rounds[1].aux)
    assert "Agent 1, explain" in prompt_text(g.rounds[2].turns[0])


def test_what_a_person_types_is_bounded_and_read_in_one_sentence():
    assert parse("", 1, 3) is None
    assert parse("@1 @3 look again", 1, 3) == Interjection(1, "look again", to=(0, 2))
    with pytest.raises(ValueError, match=r"^There are agents 1 to 3; write @1 to @3"):
        parse("@4 hello", 1, 3)
    with pytest.raises(ValueError, match=rf"^The note is {NOTE_CHARS + 1:,} characters long, over the limit"):
        Interjection(1, "x" * (NOTE_CHARS + 1))
    with pytest.raises(ValueError, match="The note is empty"):
        parse("@2   ", 1, 3)
    assert Interjection(1, "a\x00b\u202e").text == "ab"  # control and bidi characters dropped


def test_a_baseline_asks_no_moderator():
    asked = []

    async def moderator(t, r):
        asked.append(r)
        return []
    asyncio.run(Debate(ScriptedBackend(fork_replies), make_method("mad", FORK_SETTINGS), moderator=moderator)
                .run(PLANET_MCQ))
    assert asked == [1, 2]  # before each debate round, never before round 0


def test_debate_interactive_reads_notes_at_the_terminal_before_each_round(config_dir, server, monkeypatch, capsys):
    """`debate --interactive` on a real loopback server: a bad @ is answered in one sentence and asked again,
    a note and a seat before round 1, Enter goes on; the saved run holds both."""
    import builtins

    from r2mad.runs.store import RunStore
    from r2mad.settings.config import load_config
    from tests.helpers import debate_cli

    typed = iter(["@9 hello", "@2 Count the moons too.", "seat 3: I am sure it is Jupiter. ((B))", "", ""])
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(typed))
    assert debate_cli(config_dir, "--question", "Largest planet?", "--option", "A=Mars", "--option", "B=Jupiter",
                      "--gold", "B", "--no-early-stop", "--interactive") == 0
    printed = capsys.readouterr().out
    assert "There are agents 1 to 3; write @1 to @3" in printed and "Round 0: agent 1 " in printed
    [run_id] = re.findall(r"^Saved as run ([0-9a-f]{32})$", printed, re.M)
    with RunStore(Path(load_config(config_dir).app.data_dir) / "runs.sqlite") as store:
        t = store.get_run(run_id).transcript
    [note] = [c for c in t.rounds[1].aux if c.kind == "human"]
    assert (note.text, note.target) == ("Count the moons too.", 1)
    assert "Count the moons too." in prompt_text(t.rounds[1].turns[1])
    assert t.rounds[1].turns[2].details["human"] and t.rounds[1].turns[2].answer.value == "B"
    assert server.hits == 3 + 2 + 3  # the seat made no call


def test_the_apis_notes_are_read_with_agents_and_rounds_counted_as_shown():
    from r2mad.human import from_rows
    from r2mad.ui.api import compact

    rows = [{"round": 1, "text": "Check."}, {"round": 1, "to": [2], "text": "Explain."},
            {"round": 2, "seat": 3, "text": "I say ((B))"}]
    assert from_rows(rows, 3, 3) == [Interjection(1, "Check."), Interjection(1, "Explain.", (1,)),
                                     Interjection(2, "I say ((B))", seat=2)]
    for bad, problem in (([{"text": "no round"}], "give each one a round"),
                         ([{"round": 3, "text": "late"}], "Notes come before a debate round, 1 to 2"),
                         ([{"round": 1, "to": [4], "text": "x"}], "There are agents 1 to 3")):
        with pytest.raises(ValueError, match=problem):
            from_rows(bad, 3, 3)
    t, _ = debate(*from_rows(rows, 3, 3))
    shown = compact(t)
    assert shown["rounds"][1]["notes"] == [{"to": None, "text": "Check."}, {"to": 2, "text": "Explain."}]
    assert [x["human"] for x in shown["rounds"][2]["turns"]] == [False, False, True]


def test_a_seat_reads_as_a_persons_turn_in_the_chat_and_no_other_model():
    from r2mad.ui.render.chat import chat_messages
    from r2mad.ui.render.scoreboard import agent_models

    t, _ = debate(parse("seat 2: Jupiter, surely. ((B))", 1, 3), Interjection(1, NOTE))
    titles = [m["metadata"].get("title", "") for m in chat_messages(t)]
    assert "Agent 2 · written by a person — answer B (strict: ((letter)))" in titles
    assert agent_models(t) == {}  # not a mixed-model debate
    header = next(m for m in chat_messages(t) if m["metadata"].get("id") == "round-1")
    assert f"**Moderator's note** (to every agent): {NOTE}" in header["content"]
    assert "human call" not in header["content"]  # a note is no extra call


def test_blame_reads_a_persons_wrong_turn_like_any_other_and_counts_it_as_no_call():
    from r2mad.steer.blame import candidates

    t, _ = debate(parse("seat 1: Mars is the largest. ((A))", 1, 3), Interjection(1, NOTE))
    seat = [c for c in candidates(t) if (c.round, c.agent) == (1, 0)]
    assert [c.neutraliser for c in seat] == ["mask", "previous"]  # masked, or put back to its round-0 answer
    assert seat[0].estimated_calls == 3  # round 2's three agents; the note and the seat cost nothing


def test_side_by_side_every_debate_reads_the_note_and_a_baseline_none():
    """The request's one moderator reaches each method's debate of a comparison (they share round 0, then each
    asks it before its own round 1); the single-agent baseline is asked nothing."""
    from r2mad.engine.runner import Setup, run_methods

    setup = Setup(ScriptedBackend(fork_replies, name="b"), FORK_SETTINGS)
    runs = asyncio.run(run_methods(PLANET_MCQ, ("mad", "madm2-subjective", "cot"), setup,
                                   moderator=scripted([Interjection(1, NOTE)])))
    for method in ("mad", "madm2-subjective"):
        t = runs[method]
        assert all(NOTE in prompt_text(turn) for turn in t.rounds[1].turns), method
        assert [c.text for c in t.rounds[1].aux if c.kind == "human"] == [NOTE]
    assert not any(NOTE in prompt_text(turn) for r in runs["cot"].rounds for turn in r.turns)


def test_the_apps_mailbox_gives_each_debate_of_a_comparison_every_note_once():
    """Notes sent in the Debate tab (ui/moderator_box.py) are taken by the first debate to ask and kept for the
    others: each method's debate reads each note once, before its own next round."""
    import threading
    from types import SimpleNamespace

    from r2mad.ui.moderator_box import mailbox

    services = SimpleNamespace(_lock=threading.Lock(), notes={"tab": [NOTE]})
    ask = mailbox(services, "tab")
    t, _ = debate()
    mad, masked = t, dataclasses.replace(t, method="madm2-subjective")

    def texts(tr, round_index):
        return [x.text for x in asyncio.run(ask(tr, round_index))]
    assert texts(mad, 1) == [NOTE] and services.notes == {}  # taken by the first to ask
    services.notes["tab"] = ["@2 and you, agent 2?"]  # sent while the other debate was still in round 0
    assert texts(masked, 1) == [NOTE, "and you, agent 2?"]
    assert texts(mad, 2) == ["and you, agent 2?"] and texts(masked, 2) == [] and texts(mad, 3) == []
