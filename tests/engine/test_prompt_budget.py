"""One budget for what reaches a prompt (r2mad/budget.py): a person's notes and a fork's edits share a bound per
debate, retrieved cases give way to the bound per prompt, and a data row over the question bound is skipped in
one sentence while the other rows run — through the API's notes, a fork, eval rows and own data alike."""
from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from r2mad.budget import PERSON_CHARS, PROMPT_CHARS
from r2mad.debate import Debate
from r2mad.human import Interjection, from_rows, scripted
from r2mad.methods import make_method
from r2mad.steer.fork import Change, ForkSpec, replay_rounds
from r2mad.types import Task
from tests.helpers import FORK_SETTINGS, PLANET_MCQ, evaluate, fork, fork_replies, jsonl_values, parent, r2mad_reply
from tests.scripted import ScriptedBackend, last_user

NOTE = "x" * 1000  # one note at its own limit (NOTE_CHARS)


def prompt_chars(turn) -> int:
    return sum(len(m.content) for m in turn.prompt)


def debate_with(said, method="mad", settings=FORK_SETTINGS, backend=None, bank=None, task=PLANET_MCQ):
    backend = backend or ScriptedBackend(r2mad_reply)
    method = make_method(method, settings, bank=bank) if bank is not None else make_method(method, settings)
    return asyncio.run(Debate(backend, method, moderator=scripted(said) if said else None).run(task))


def test_a_thousand_api_notes_stop_at_the_bound_in_one_sentence_and_the_prompts_stay_under_it():
    from r2mad.serving.compact import compact

    rows = [{"round": 1 + i % 2, "text": "y" * 100} for i in range(1000)]  # rounds 1 and 2, as one API call sends
    t = debate_with(from_rows(rows, 3, 3))
    notes = [c for r in t.rounds for c in r.aux if c.kind == "human"]
    assert len(notes) == PERSON_CHARS // 100 == 80  # round 1 takes 80 of its 500; round 2 none of its 500
    full = [n for n in compact(t)["notices"] if n.startswith("Notes are full")]
    assert full == [
        "Notes are full: this debate already carries 8,000 characters of notes and edits (limit 8,000); 420 more "
        "notes were not sent — say it in fewer words, or start a new debate.",
        "Notes are full: this debate already carries 8,000 characters of notes and edits (limit 8,000); 500 more "
        "notes were not sent — say it in fewer words, or start a new debate."]
    assert max(prompt_chars(turn) for r in t.rounds for turn in r.turns) < PROMPT_CHARS


def test_a_debate_whose_stored_transcript_passes_its_bound_stops_after_that_round(monkeypatch):
    monkeypatch.setattr("r2mad.budget.STORED_CHARS", 2_000)  # its rounds store 822, 2,218 and 3,614 characters
    t = debate_with(())
    assert [len(r.turns) for r in t.rounds] == [3, 3] and t.status == "done"
    assert t.notices[-1].startswith("The debate stopped here: its transcript holds ")
    assert t.notices[-1].endswith(" characters, over the limit of 2,000 a run may store; use fewer agents, rounds "
                                  "or tokens.")


def test_a_forks_edits_count_in_the_same_bound_as_notes():
    t, _ = parent()
    too_much = ForkSpec(1, tuple(Change("edit", a, f"(({'ABC'[a]})) " + "y" * 2994) for a in range(3)))
    with pytest.raises(ValueError, match=r"^The fork's edits and notes come to 9,000 characters, over the limit of "
                                         r"8,000 for what a person adds to one debate; shorten the edits\.$"):
        replay_rounds(t, too_much)
    spec = ForkSpec(1, (Change("edit", 0, "((B)) " + "z" * 3994),))  # 4,000 characters: room for 4 notes of 1,000
    from r2mad.engine.forks import fork_debate
    from r2mad.engine.runner import Setup

    notes = [Interjection(1, str(i) + NOTE[1:]) for i in range(5)]
    f = asyncio.run(fork_debate(t, spec, Setup(ScriptedBackend(fork_replies, name="b"), FORK_SETTINGS),
                                moderator=scripted(notes)))
    assert sum(c.kind == "human" for c in f.rounds[1].aux) == 4
    assert ("Notes are full: this debate already carries 8,000 characters of notes and edits (limit 8,000); 1 more "
            "note was not sent — say it in fewer words, or start a new debate.") in f.notices
    edited, _ = fork(t, spec)  # without notes the fork runs as before
    assert edited.rounds[0].turns[0].text.startswith("((B)) zzz")


def test_memory_cases_past_the_prompt_bound_are_left_out_least_relevant_first(tmp_path):
    from r2mad.backends.embedder import HashEmbedder
    from r2mad.memory.bank import MemoryBank
    from tests.helpers import bank_case

    bank = MemoryBank.create(tmp_path / "bank", task_kind="math", split="train", backbone="scripted",
                             embedder=HashEmbedder(64), code_version="test", index_root=tmp_path / "index")
    long = "w " * 8_000  # 16,000 characters: two such cases pass the 32,000 a prompt may hold beside the question
    bank.add([bank_case(f"q{i}", agent=a, text=f"case {i}: {long}") for i in range(2) for a in range(3)])
    settings = FORK_SETTINGS.replace(k=2, case_tokens=32768, rounds=2)
    reply = lambda m: "Two positions remain." if "Positions of the agents" in last_user(m) else r"So \boxed{4}."  # noqa: E731
    t = debate_with((), "r2mad", settings, ScriptedBackend(reply), bank, Task("math", "What is 2 + 2?", gold="4",
                                                                               id="m"))
    icl = debate_with((), "icl-cot", settings, ScriptedBackend(reply), bank, Task("math", "What is 2 + 2?", gold="4",
                                                                                 id="m"))
    bank.close()
    said = [n for n in t.notices if "least relevant" in n]
    assert said == [f"Agent {a}'s prompt would pass its bound of 32,000 characters, so its 1 least relevant "
                    "memory case was left out." for a in (1, 2, 3)]
    shown = [turn.prompt[-1].content for turn in t.rounds[1].turns]
    assert [("<memory case 1>" in p, "<memory case 2>" in p) for p in shown] == [(True, False)] * 3
    assert max(prompt_chars(turn) for turn in t.rounds[1].turns) < PROMPT_CHARS
    [turn] = icl.rounds[0].turns  # ICL-CoT's worked examples give way alike
    assert ("<memory case 1>" in turn.prompt[-1].content, "<memory case 2>" in turn.prompt[-1].content) == (True, False)
    assert [n for n in icl.notices if "least relevant" in n] == [said[0]]


def test_advice_past_the_prompt_bound_is_left_out_with_a_notice(monkeypatch):
    # here the question takes 55 characters, the advice block 475 with both messages and 401 with one
    monkeypatch.setattr("r2mad.budget.PROMPT_CHARS", 55 + 450)
    t = debate_with((), "truemad", FORK_SETTINGS.replace(rounds=2), ScriptedBackend(fork_replies))
    assert [len(turn.details["advice_from"]) for turn in t.rounds[1].turns] == [1, 1, 1]
    assert [n for n in t.notices if "least relevant" in n] == [
        f"Agent {a}'s prompt would pass its bound of 505 characters, so its 1 least relevant advice message was "
        "left out." for a in (1, 2, 3)]


def _rows(tmp_path, huge: int):
    from r2mad.evaluation.datasets import DEMO_DIR

    rows = [json.loads(line) for line in (DEMO_DIR / "mcq.jsonl").read_text().splitlines()]
    rows = [dict(r, split="test") for r in rows[:3]]
    rows[1]["question"] = "Which is it? " + "v" * huge
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


@pytest.mark.parametrize("source, huge", [("dataset", 100_000), ("own data", 100_000),
                                          pytest.param("dataset", 45_000_000, marks=pytest.mark.slow)])
def test_an_eval_row_over_the_question_bound_is_skipped_in_one_sentence_and_the_others_run(tmp_path, source, huge):
    from r2mad.evaluation.datasets import load_split
    from r2mad.evaluation.own_data import load_own
    from r2mad.evaluation.rows import EvalRun
    from tests.helpers import EVAL_SETTINGS

    path, rows = _rows(tmp_path, huge)  # 45 MB as the probe sent, in the slow tier
    split = (load_split("demo-mcq", "test", data_file=path) if source == "dataset" else
             load_own(str(path), "question=question,answer=answer,choices=options,id=id", kind="mcq"))
    warned = []
    backend = evaluate(EvalRun(split, ("cot",), "scripted", EVAL_SETTINGS), tmp_path / "out", warn=warned.append)
    assert sorted(r["question_id"] for r in jsonl_values(tmp_path / "out" / "rows.jsonl")) == sorted(
        [rows[0]["id"], rows[2]["id"]])
    assert [w for w in warned if "question limit" in w] == [
        f"1 question over the question limit of 4,000 characters was skipped, never sent ('{rows[1]['id']}'); "
        "shorten them in the data to run them."]
    assert max(sum(len(m.content) for m in call.messages) for call in backend.calls) < 4_000 + 1_000


def test_a_saved_run_with_a_question_over_the_bound_is_refused_before_any_call():
    from r2mad.engine.service import RunRequest, check_runnable

    task = dataclasses.replace(PLANET_MCQ, question="Which? " + "q" * 5000)
    with pytest.raises(ValueError, match=r"^The question is 5,\d{3} characters long with its options, over the "
                                         r"limit of 4,000; shorten it\.$"):
        check_runnable(RunRequest(task, ("mad",), FORK_SETTINGS, "b", source="rerun"), None)


def test_the_pages_send_says_notes_are_full_at_the_note_past_the_bound():
    import threading
    from types import SimpleNamespace

    from r2mad.ui.moderator_box import send

    services = SimpleNamespace(_lock=threading.Lock(), _active={"tab": None}, notes={}, noted={})
    said = [send(services, f"{i} " + "n" * 998, "tab")[1] for i in range(9)]  # 1,000 characters each
    assert all(s.startswith("Sent — reaches every agent") for s in said[:8])
    assert said[8] == ("**Not sent:** Notes are full: this debate already carries 8,000 characters of notes and "
                       "edits (limit 8,000); 1 more note was not sent — say it in fewer words, or start a new debate.")
    assert len(services.notes["tab"]) == 8
