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
    scores = asyncio.run(score_transcript(transcript(), backend))
    assert [s.agent for s in scores] == [0, 1, 2]
    assert scores[0].verdicts == ("yes", "yes", "no") and scores[0].score == 2 / 3
    assert scores[1].skipped and scores[1].score is None  # one short line: "does not know" (the authors skip it)
    assert scores[2].verdicts == ("yes", "uncertain", "no") and scores[2].score == 1 / 2
    assert pooled(scores) == 3 / 5  # yes 3, no 2; the uncertain one counts in neither
    assert len(backend.calls) == 6  # 2 scored agents x 3 bullets; the skipped agent costs nothing
    asked = last_user(backend.calls[0].messages)
    assert "Ann Example" in asked and "yes, no or uncertain" in asked


def test_verdicts_are_whole_words_and_the_share_of_yes_among_yes_and_no():
    assert parse_verdict("Yes, consistent.") == "yes"
    assert parse_verdict("I cannot know; nothing is said.") is None  # "not", "know" are not "no"
    assert parse_verdict("No - the date differs") == "no"
    assert parse_verdict("<think>yes maybe</think>Uncertain.") == "uncertain"
    assert factuality(["yes", "no", "uncertain", None, "yes"]) == 2 / 3
    assert factuality(["uncertain"]) is None
    assert bullets_of("1. Born 1950\n\n  - Won prizes\n***\n") == ["Born 1950", "Won prizes"]


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
