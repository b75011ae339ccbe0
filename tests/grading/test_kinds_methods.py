"""Every method on every answer kind (scripted backend: the loop's logic), and R²-MAD's memory on free text:
cases keep the agents' own answers and the reward the kind scores."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from r2mad.backends.embedder import Embedder, HashEmbedder
from r2mad.debate import Debate
from r2mad.engine.build_memory import build
from r2mad.grading.kinds import KINDS
from r2mad.grading.kinds.meaning import MEANING
from r2mad.memory.bank import MemoryBank
from r2mad.methods import METHODS, REGISTRY, make_method
from r2mad.settings.config import DebateSettings
from r2mad.types import Task
from tests.helpers import SYSTEMS
from tests.scripted import ScriptedBackend

QUESTIONS = {
    "math": (Task("math", "What is 12 + 30?", gold="42", id="m"), "\\boxed{42}", "42"),
    "mcq": (Task("mcq", "Which planet is largest?", (("A", "Mars"), ("B", "Jupiter")), "B", "c"), "((B))", "B"),
    "integer": (Task("integer", "AIME-style: what is 6 * 7?", gold="42", id="i"), "\\boxed{042}", "42"),
    "yesno": (Task("yesno", "Is a hot dog a sandwich?", gold="no", id="y"), "Final answer: No.", "no"),
    "short": (Task("short", "What is the capital of Australia?", gold="Canberra", id="s"),
              "Final answer: The capital of Australia is Canberra.", "Canberra"),
    "open": (Task("open", "Should I learn Rust or Go first?", id="o"), "Final answer: Learn Go first.",
             "Learn Go first"),
}


class OneWordEmbedder(Embedder):
    """A text's first letter decides its direction: no model, and "Canberra" never meets "Sydney"."""
    id, dim = "one-word", 26

    def encode(self, texts):
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            rows[i, (ord(text.strip()[:1].lower() or "a") - ord("a")) % 26] = 1.0
        return rows


@pytest.fixture(autouse=True)
def meaning():
    before = MEANING.embedder
    MEANING.use(OneWordEmbedder())
    yield
    MEANING.use(before)


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bank")
    bank = MemoryBank.create(folder / "bank", task_kind="short", split="train", backbone="scripted",
                             embedder=HashEmbedder(64), code_version="test", index_root=folder / "index")
    yield bank
    bank.close()


def reply_with(line: str):
    """Every call gets the kind's answer line; a MAD-M² judge finds its label after it."""
    return lambda messages: f"I weighed it.\n{line}\n<label>YES</label>"


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("method", [*METHODS, "mad+advice"])
def test_every_method_reaches_the_kinds_answer(method, kind, bank):
    task, line, value = QUESTIONS[kind]
    settings = DebateSettings(agents=3, rounds=2, early_stop=False, seed=1)
    strategy = make_method(method, settings, bank=bank if REGISTRY[method.removesuffix("+advice")].needs_bank else None)
    t = asyncio.run(Debate(ScriptedBackend(reply_with(line)), strategy).run(task))
    assert t.status == "done" and t.final.value == value
    assert t.rounds[-1].consensus == 1.0
    assert t.correct is KINDS[kind].correct(t.final, task)


def test_r2mad_cases_on_short_answers_keep_the_free_text_and_the_kinds_reward(tmp_path):
    tasks = [Task("short", "What is the capital of Australia?", gold="Canberra", id="q1")]
    said = ["Final answer: Canberra", "Final answer: Sydney", "Final answer: canberra."]
    bank = MemoryBank.create(tmp_path / "short", task_kind="short", split="train", backbone="scripted",
                             embedder=HashEmbedder(64), code_version="test", index_root=tmp_path / "index")

    def reply(messages):
        system = messages[0].content if messages[0].role == "system" else ""
        return said[SYSTEMS.index(system)] if system in SYSTEMS else "Two positions; nobody moved."

    backend = ScriptedBackend(reply)
    asyncio.run(build(tasks, bank, backend, DebateSettings(seed=1, rounds=3)))
    cases = sorted(bank.cases(), key=lambda c: (c.round, c.agent))
    assert [c.answers for c in cases][0] == ("Canberra", "Sydney", "canberra")
    assert [(c.agent, c.reward) for c in cases if c.round == 1] == [(0, 1.0), (1, 0.0), (2, 1.0)]
    assert cases[0].correct == (True, False, True) and not any(c.stance_changed for c in cases)
    bank.close()
