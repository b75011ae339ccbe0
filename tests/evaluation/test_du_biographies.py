"""Du et al.'s biographies end to end as their code runs them (biography/gen_conversation.py and
eval_conversation.py, read there): `eval --task biographies --profile du` on the authors' article.json layout
through a real HTTP server, then `factuality` with their judge prompt and reading. The prompts, the order in which
the agents of an update read each other, the stop after a one-bullet reply and the score are checked by hand."""
from __future__ import annotations

import itertools
import json
import threading

import pytest

from r2mad.cli import main
from testing.scripted_server import FakeServer, ok

ARTICLES = {"Ann Example (computer scientist)": "Born in Paris in 1950.\nWon the Turing Award.",
            "Bob Sample": "Wrote a compiler."}
FIRST = ("Give a bullet point biography of {} highlighting their contributions and achievements as a computer "
         "scientist, with each fact separated with a new line character. ")


class Script:
    """The debaters and the judge behind one server: round 0 draws numbered biographies (any agent may get any
    number, as the calls race); an update keeps the agent's facts and says whose draft it revised."""

    def __init__(self):
        self.drafts, self.lock = itertools.count(), threading.Lock()

    def __call__(self, body):
        messages = body["messages"]
        text = messages[-1]["content"]
        if text.startswith("Consider the following biography"):  # the authors' judge prompt
            return ok(self.verdict(text))
        if "Bob Sample" in messages[0]["content"]:
            return ok("I could not find anything about Bob Sample.")  # one bullet: the model does not know him
        if len(messages) == 1:
            with self.lock:
                n = next(self.drafts)
            return ok(f"- Ann was born in Paris in 1950.\n- She won the Turing Award.\n- Draft {n}.")
        own = messages[1]["content"].rsplit("Draft ", 1)[1]
        return ok(f"- Ann was born in Paris in 1950.\n- She won the Turing Award.\n- Revised draft {own}")

    @staticmethod
    def verdict(prompt):
        if "Born in Paris" in prompt.rsplit("consistent with the fact below?", 1)[1]:
            return "Yes, it is consistent."
        if "Revised draft 0." in prompt:
            return "No."
        if "Revised draft 1." in prompt:
            return "I am uncertain, though yes is likely."
        return "no, the award is not listed"


@pytest.fixture
def server():
    with FakeServer(models=["fake-model"], responder=Script()) as srv:
        yield srv


def test_biographies_under_profile_du_are_asked_and_scored_as_the_authors_code_does(config_dir, server, tmp_path,
                                                                                      capsys):
    data, out = tmp_path / "article.json", tmp_path / "bios"
    data.write_text(json.dumps(ARTICLES), encoding="utf-8")
    assert main(["--config-dir", str(config_dir), "eval", "--task", "biographies", "--data", str(data), "--profile",
                 "du", "--methods", "mad", "--backbone", "fake", "--no-progress", "--out", str(out)]) == 0, \
        capsys.readouterr().err
    rows = {json.loads(line)["question_id"]: json.loads(line)["transcript"]
            for line in (out / "rows.jsonl").read_text().splitlines()}
    [ann] = [t for t in rows.values() if "Ann" in t["task"]["question"]]
    [bob] = [t for t in rows.values() if "Bob" in t["task"]["question"]]

    # Round 0: the authors' first prompt alone, the qualifier cut and its trailing space kept; no persona
    opening = [{"role": "user", "content": FIRST.format("Ann Example ")}]
    assert [turn["prompt"] for turn in ann["rounds"][0]["turns"]] == [opening] * 3
    draft = [turn["text"].rsplit(" ", 1)[1] for turn in ann["rounds"][0]["turns"]]  # "0.", "1.", "2." in some order

    # Round 1, the last: one agent after another, each shown the others' latest biographies (this round's for those
    # before it), then the authors' final-round request
    def shown(*texts):
        return ("Here are some bullet point biographies of Ann Example  given by other agents: "
                + "".join(f"\n\n Agent response: ```{t}```" for t in texts)
                + "\n\n Closely examine your biography and the biography of other agents and provide an updated "
                  "bullet point biography.")
    r0 = [turn["text"] for turn in ann["rounds"][0]["turns"]]
    r1 = [turn["text"] for turn in ann["rounds"][1]["turns"]]
    assert r1 == [f"- Ann was born in Paris in 1950.\n- She won the Turing Award.\n- Revised draft {d}" for d in draft]
    assert [turn["prompt"][-1]["content"] for turn in ann["rounds"][1]["turns"]] == [
        shown(r0[1], r0[2]), shown(r1[0], r0[2]), shown(r1[0], r1[1])]
    assert all(turn["answer"]["how"] == "unparsed" for r in ann["rounds"] for turn in r["turns"])  # none asked for

    # Bob: the last agent wrote one bullet, so no update (the authors' break); 3 + 6 debate calls, no answer guard
    assert len(bob["rounds"]) == 1 and any("one bullet" in n for n in bob["notices"])
    generation = [r for r in server.requests if not r.body["messages"][-1]["content"].startswith("Consider")]
    assert len(generation) == 9

    # The authors' scoring: per agent and ground-truth fact, "uncertain" anywhere -> none, else "yes", else "no";
    # Bob's one-line replies (under 400 characters) skipped. Ann: birth yes x3; award: draft 0 no, draft 1 uncertain,
    # draft 2 no -> yes 3, no 2 -> 60.0 %
    assert main(["--config-dir", str(config_dir), "factuality", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "the authors' reading" in printed
    assert "mad: factuality 60.0% (yes among yes and no; 3 of 6 biographies skipped" in printed
    judged = [r.body["messages"] for r in server.requests if r.body["messages"][-1]["content"].startswith("Consider")]
    assert len(judged) == 6 and all(len(m) == 1 and m[0]["role"] == "user" for m in judged)
    biography = "Ann was born in Paris in 1950. She won the Turing Award. Revised draft 0."
    assert {"role": "user", "content": (
        f"Consider the following biography of Ann Example : \n {biography} \n\n Is the above biography above "
        "consistent with the fact below? \n\n Won the Turing Award. \n Give a single word answer, yes, no, or "
        "uncertain. Carefully check the precise dates and locations between the fact and the above biography.")} in [
        m[0] for m in judged]
