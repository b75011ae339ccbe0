"""Du et al.'s biography factuality by hand: a scripted judge says yes / no / uncertain per ground-truth bullet;
each agent's score is yes / (yes + no), pooled over agents with no majority vote (the authors' scoring)."""
import asyncio
import dataclasses
import json

import pytest

from r2mad.cli import main
from r2mad.evaluation.benchmarks.biographies import (
    bullets_of,
    factuality,
    parse_verdict,
    pooled,
    score_transcript,
    to_tasks,
)
from r2mad.settings.config import DebateSettings, with_profile
from r2mad.types import AgentTurn, Answer, Message, Round, Task, Transcript, to_dict
from testing.scripted_server import FakeServer, ok
from tests.scripted import ScriptedBackend, last_user

FACTS = ["Born in Paris in 1950.", "Won the Turing Award.", "Taught at MIT."]
TASK = Task("open", "Write a biography of Ann Example ...", gold="\n".join(FACTS), id="bio-ann", source="biographies",
            solution="Ann Example")
BIOS = ["- Ann Example was born in Paris in 1950 [A].\n- She won the Turing Award.\n- She taught at Stanford.",
        "I do not know this person.",
        "- Ann Example, born 1950 [C].\n- She received many awards.\n- She taught at Harvard."]
# (marker of the agent's biography, fact) -> the judge's reply
REPLIES = {("[A]", FACTS[0]): "Yes.", ("[A]", FACTS[1]): "yes", ("[A]", FACTS[2]): "No, it says Stanford.",
           ("[C]", FACTS[0]): "YES", ("[C]", FACTS[1]): "Uncertain: it says many awards.",
           ("[C]", FACTS[2]): "<think>yes? no</think>no"}


def judge(messages):
    text = last_user(messages)
    return next(reply for (marker, fact), reply in REPLIES.items() if marker in text and fact in text)


def transcript():
    turns = tuple(AgentTurn(i, 1, "p", (Message("user", "q"),), bio, Answer(None)) for i, bio in enumerate(BIOS))
    return Transcript(TASK, "mad", "scripted", {}, (Round(0, turns, 0.0), Round(1, turns, 0.0)), Answer(None))


def test_each_agent_is_scored_on_its_own_and_pooled_without_a_vote():
    backend = ScriptedBackend(judge)
    scores = asyncio.run(score_transcript(transcript(), backend, reading="words"))
    assert [s.agent for s in scores] == [0, 1, 2]
    assert scores[0].verdicts == ("yes", "yes", "no") and scores[0].score == 2 / 3
    assert scores[1].skipped and scores[1].score is None  # one short line: "does not know" (the authors skip it)
    assert scores[2].verdicts == ("yes", "uncertain", "no") and scores[2].score == 1 / 2
    assert pooled(scores) == 3 / 5  # yes 3, no 2; the uncertain one counts in neither
    assert len(backend.calls) == 6  # 2 scored agents x 3 bullets; the skipped agent costs nothing
    asked = last_user(backend.calls[0].messages)
    assert "Ann Example" in asked and "yes, no or uncertain" in asked


# Judge replies as gpt-3.5 writes them, with each reading's verdict worked out by hand
READ_BY_HAND = [  # (reply, the authors' reading, ours)
    ("Yes.", "yes", "yes"), ("No.", "no", "no"), ("Uncertain.", "uncertain", "uncertain"),
    ("Yes, the biography is consistent with the fact.", "yes", "yes"),
    ("The biography does not mention this fact, so I cannot say.", "no", None),  # "not" holds "no"
    ("I don't know.", "no", None),  # "know" holds "no"
    ("No, the biography says 1962, not 1960.", "no", "no"),
    ("Not enough information; uncertain.", "uncertain", "uncertain"),  # "uncertain" is looked for first
    ("The answer is yes, but the year is not given.", "yes", "yes"),  # "yes" before "no"
    ("Consistent.", None, None),
    ("Inconsistent: the fact says Stanford, the biography MIT. No.", "no", "no"),
    ("Yes and no: the date matches, the place does not.", "yes", "yes"),
]


@pytest.mark.parametrize("reply, authors, ours", READ_BY_HAND)
def test_the_authors_reading_looks_for_words_anywhere_and_ours_for_the_first_whole_word(reply, authors, ours):
    assert parse_verdict(reply, "authors") == authors and parse_verdict(reply, "words") == ours


def test_the_two_readings_give_the_authors_score_and_ours_on_the_same_replies():
    facts = [f"Fact number {i}." for i in range(len(READ_BY_HAND))]
    task = dataclasses.replace(TASK, gold="\n".join(facts))
    replies = {fact: reply for fact, (reply, _, _) in zip(facts, READ_BY_HAND)}
    bio = "- Born somewhere.\n- Did something."
    turn = AgentTurn(0, 1, "p", (), bio, Answer(None))
    t = Transcript(task, "mad", "scripted", {}, (Round(1, (turn,), 0.0),), Answer(None))
    backend = ScriptedBackend(lambda m: next(r for f, r in replies.items() if f in last_user(m)))
    authors = asyncio.run(score_transcript(t, backend))  # the authors' reading is the default
    ours = asyncio.run(score_transcript(t, backend, reading="words"))
    assert pooled(authors) == 4 / 9  # yes 4, no 5 ("not", "know" read as no), uncertain 2, unread 1
    assert pooled(ours) == 4 / 7  # yes 4, no 3, uncertain 2, unread 3
    asked = last_user(backend.calls[0].messages)
    assert asked.startswith("Consider the following biography of Ann Example: \n Born somewhere. Did something.")
    assert asked.endswith("Carefully check the precise dates and locations between the fact and the above biography.")
    assert backend.calls[0].messages[0].role == "user" and len(backend.calls[0].messages) == 1  # no system prompt


def test_an_empty_reply_is_judged_by_the_authors_and_skipped_by_us():
    empty = AgentTurn(0, 1, "p", (), "", Answer(None))
    t = Transcript(TASK, "mad", "scripted", {}, (Round(1, (empty,), 0.0),), Answer(None))
    backend = ScriptedBackend(lambda m: "No.")
    [authors] = asyncio.run(score_transcript(t, backend))
    [ours] = asyncio.run(score_transcript(t, backend, reading="words"))
    assert authors.verdicts == ("no", "no", "no") and not authors.skipped and ours.skipped
    assert "biography of Ann Example: \n  \n\n" in last_user(backend.calls[0].messages)  # an empty biography


def test_verdicts_are_read_outside_reasoning_and_the_share_of_yes_among_yes_and_no():
    assert parse_verdict("<think>yes maybe</think>Uncertain.") == "uncertain"
    assert parse_verdict("<think>yes maybe</think>Uncertain.", "words") == "uncertain"
    assert factuality(["yes", "no", "uncertain", None, "yes"]) == 2 / 3
    assert factuality(["uncertain"]) is None
    assert bullets_of("1. Born 1950\n\n  - Won prizes\n***\n") == ["Born 1950", "Won prizes"]


def test_questions_and_names_are_the_authors_own():
    [task] = to_tasks([{"person": "Alan Kay (computer scientist)", "bullets": "Invented Smalltalk."}], 0, "x")
    assert task.solution == "Alan Kay "  # the qualifier cut off as their code does, its trailing space kept
    assert task.question == ("Give a bullet point biography of Alan Kay  highlighting their contributions and "
                             "achievements as a computer scientist, with each fact separated with a new line "
                             "character. ")


@pytest.fixture
def server():
    """The judge on loopback (the OpenAI-compatible path): it answers as REPLIES says."""
    def respond(body):
        return ok(judge(tuple(Message(m["role"], m["content"]) for m in body["messages"])))
    with FakeServer(models=["fake-model"], responder=respond) as srv:
        yield srv


def test_factuality_command_scores_a_results_folder_through_a_real_http_judge(config_dir, tmp_path, capsys):
    out = tmp_path / "bios"
    out.mkdir()
    settings = {**dataclasses.asdict(with_profile(DebateSettings(), "du"))}
    (out / "run.json").write_text(json.dumps({
        "dataset": "biographies", "split": "test", "split_seed": 0, "methods": ["mad"], "backbone": "fake",
        "seed": 0, "seeds": [0], "settings": settings, "question_ids": ["bio-ann"]}), encoding="utf-8")
    t = transcript()
    (out / "rows.jsonl").write_text(json.dumps({"question_index": 0, "question_id": "bio-ann", "method": "mad",
                                                "seed": 0, "transcript": to_dict(t)}) + "\n", encoding="utf-8")
    assert main(["--config-dir", str(config_dir), "factuality", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "mad: factuality 60.0% (yes among yes and no; 1 of 3 biographies skipped" in printed
    assert "| Multi-Agent (Debate) | 60.0 ± 21.9 |" in printed  # Du et al.'s layout under --profile du
    rows = [json.loads(line) for line in (out / "factuality.jsonl").read_text().splitlines()]
    assert [(r["agent"], r["verdicts"], r["skipped"]) for r in rows] == [
        (0, ["yes", "yes", "no"], False), (1, [], True), (2, ["yes", "uncertain", "no"], False)]
    other = tmp_path / "other"
    other.mkdir()
    assert main(["--config-dir", str(config_dir), "factuality", "--out", str(other)]) != 0
    assert "has no run.json" in capsys.readouterr().err
