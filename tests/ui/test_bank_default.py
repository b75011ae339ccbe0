"""R²-MAD picked with "(no memory bank)" is never silently memory-less: the Debate tab gives it the app's
default bank (and says so), and where there is none every surface says "memory off" (outcome line,
side-by-side summary), not only the saved transcript. Scripted server, real bank on disk, the tab's handler."""
import asyncio
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from r2mad.serving.services import Services
from r2mad.settings.config import load_config
from r2mad.types import Answer, Round, Transcript
from r2mad.ui.handlers import DebateHandlers
from r2mad.ui.render.states import outcome_line
from r2mad.ui.render.tables import summary_rows
from r2mad.ui.views import VIEW_NAMES
from r2mad.ui.vote_panel import VoteHandlers
from testing.scripted_server import FakeServer, ok
from tests import helpers

ROOT = Path(__file__).resolve().parents[2]
bank = helpers.bank  # a real bank on disk (hash embedder) built from PLANET_TASKS


def services_with(tmp: Path, base_url: str, default_bank: str | None) -> Services:
    config = load_config(ROOT / "configs", env={"R2MAD_DATA_DIR": str(tmp / "var")})
    fake = dataclasses.replace(config.backbone(config.default_backbone), name="fake", kind="openai",
                               base_url=base_url, model="m", timeout_s=10, max_retries=0)
    app = dataclasses.replace(config.app, embedder="hash-64", memory_dirs=(str(tmp),), default_bank=default_bank)
    return Services(dataclasses.replace(config, backbones={"fake": fake}, default_backbone="fake", app=app))


def compare(services) -> list[tuple]:
    form = dict(backbone="fake", methods=["mad", "r2mad"], blind=True, bank="", agents=2, rounds=2, k=1, gamma=0.9,
                temperature=0.7, max_tokens=32, seed=0, answer_guard="off", gold="B",
                question="Which planet has the most moons?", option_a="Mars", option_b="Saturn", option_c="Venus")

    async def run():
        return [u async for u in DebateHandlers(services).run_debate(
            **form, visitor_id="v" * 32, request=SimpleNamespace(session_hash="s"))]
    return asyncio.run(run())  # the comparison's updates; the last one asks for the blind vote


@pytest.fixture
def server():
    calls = []

    def split(body):  # the agents disagree, so the debate goes past round 0 and R²-MAD retrieves; every reply
        calls.append(1)  # its own words, so two debates never read the same (identical ones ask no vote)
        n = len(calls)
        return ok(f"Reply {n}: Saturn has the most. ((B))" if n % 2 else f"Reply {n}: Mars, I think. ((A))")
    with FakeServer(models=["m"], responder=split) as srv:
        yield srv


def test_r2mad_without_a_chosen_bank_uses_the_default_one(tmp_path, bank, server):
    services = services_with(tmp_path, server.base_url, default_bank=str(bank.path))
    compare(services)
    [run] = services.store.list_runs(method="r2mad")
    assert run.bank == str(bank.path)
    t = services.store.get_run(run.id).transcript
    assert not any(n.startswith("Memory off") for n in t.notices)
    assert any(turn.details.get("retrieved") for r in t.rounds[1:] for turn in r.turns)  # it read the bank


def test_without_a_default_bank_every_surface_says_memory_off(tmp_path, server):
    services = services_with(tmp_path, server.base_url, default_bank=None)
    updates = compare(services)
    [run] = services.store.list_runs(method="r2mad")
    t = services.store.get_run(run.id).transcript
    assert run.bank is None and outcome_line(t).endswith(" · memory off")
    # blind until the vote: the debate whose method reads a bank says "memory off", naming no method
    blind, state = dict(zip(VIEW_NAMES, updates[-2])), updates[-1][len(VIEW_NAMES)]
    which = next(name for name, m in state["shown"].items() if m == "r2mad")
    assert "R²-MAD" not in str(blind["status"]) and f"{which}: " in str(blind["status"])
    assert str(blind["status"]).count("memory off") == 1
    assert [row[0] for row in blind["summary"].value["data"]].count(f"{which} (memory off)") == 1
    # then the names, and the same words on every surface
    shown = dict(zip(VIEW_NAMES, VoteHandlers(services).vote(None, state, "v" * 32, None, None, None)))
    assert "R²-MAD" in str(shown["status"]) and "memory off" in str(shown["status"])
    summary = str(shown["summary"].value)
    assert "r2mad (memory off)" in summary and "'mad (memory off)'" not in summary


def test_memory_off_is_said_only_for_a_method_that_reads_a_bank():
    task = helpers.PLANET_MCQ
    r0 = Round(0, (), 0.0)
    said = ("Memory off: no memory bank was given; this runs without retrieved cases.",)
    r2mad = Transcript(task, "r2mad", "fake", {}, (r0,), Answer("B", "double_paren"), True, "done", notices=said)
    mad = dataclasses.replace(r2mad, method="mad")
    assert outcome_line(r2mad) == "Final answer: B — correct · B = Jupiter · memory off"
    assert outcome_line(mad) == "Final answer: B — correct · B = Jupiter"
    assert [row[0] for row in summary_rows({"r2mad": r2mad, "mad": mad})] == ["r2mad (memory off)", "mad"]
