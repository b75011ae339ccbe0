"""The LLM judge as a second annotator: its prompt, the parsing of its reply (a quote must be in the turn it
names), its suggestions beside the detectors', and its agreement with adjudicated labels computed by hand;
the `judge` command against a real OpenAI-compatible server on loopback."""
import asyncio
import dataclasses

import pytest
import yaml

from r2mad.annotation.book import LabelBook
from r2mad.annotation.judge import judge_messages, judge_transcript, parse_reply
from r2mad.annotation.judge_book import judge_markdown, judge_scores, save_verdict
from r2mad.cli import main
from r2mad.runs.store import RunStore
from r2mad.types import Task
from testing.scripted_server import FakeServer, ok
from tests.helpers import make_transcript, save_run
from tests.scripted import ScriptedBackend

TASK = Task("mcq", "Which planet is largest?", (("A", "Mars"), ("B", "Jupiter")), gold="B", id="planets")
TAXONOMY = {"majority_persuaded_correct_agent": "a right agent joined a wrong majority",
            "oscillation": "A → B → A", "stalled_split": "same split twice", "parse_failure": "unparsed"}


def debate(answers=(("B", "A", "A"), ("A", "A", "A")), final="A", correct=False, question=TASK):
    """Each turn says where it is (1-based, as the judge reads it) and its answer."""
    t = make_transcript(question, [list(row) for row in answers], final, correct)
    rounds = tuple(dataclasses.replace(r, turns=tuple(dataclasses.replace(
        turn, text=f"In round {r.index + 1} I, agent {turn.agent + 1}, now say (({turn.answer.value})) "
                   f"because the others agree on {turn.answer.value}.") for turn in r.turns)) for r in t.rounds)
    return dataclasses.replace(t, rounds=rounds)


REPLY = """Here is what I found.
LABEL: majority_persuaded_correct_agent
TURN: round 2, agent 1
QUOTE: "agent 1, now say ((A)) because the OTHERS agree"

LABEL: oscillation
TURN: Round 2, Agent 3
QUOTE: "this sentence is not in the debate"

Stalled split (R9 A1) "In round 9 I, agent 1"
parse-failure — round 1, agent 2: “In round 1 I, agent 2, now say ((A))”
made_up_label round 1 agent 1 "In round 1 I, agent 1"
majority_persuaded_correct_agent
TURN: round 2, agent 1
QUOTE: "agent 1, now say ((A))"
"""


def test_the_prompt_names_the_labels_the_outcome_and_every_turn_from_one():
    system, user = judge_messages(debate(), TAXONOMY)
    assert "LABEL:" in system.content and "QUOTE:" in system.content
    assert "- oscillation: A → B → A" in user.content
    assert "Correct answer: B. The debate's final answer: A (wrong)." in user.content
    assert "(B) Jupiter" in user.content
    assert "Round 2, agent 3 (answer A):\nIn round 2 I, agent 3" in user.content and "Round 3" not in user.content


def test_a_proposal_is_kept_only_with_a_turn_of_the_debate_and_a_quote_from_it():
    kept, dropped = parse_reply(REPLY, debate(), TAXONOMY, "llm:scripted")
    assert [(s.label, s.round, s.agents) for s in kept] == [("majority_persuaded_correct_agent", 1, (0,)),
                                                            ("parse_failure", 0, (1,))]  # the repeat: once
    assert kept[0].evidence == {"span": "agent 1, now say ((A)) because the OTHERS agree", "kind": "llm",
                                "judge": "llm:scripted"}
    assert kept[0].detector == "llm:scripted"
    assert dropped == ["oscillation: the quote 'this sentence is not in the debate' is not in round 2, agent 3's text",
                       "stalled_split: the debate has no round 9, agent 1"]
    assert parse_reply("NONE", debate(), TAXONOMY, "llm:x") == ([], [])
    assert parse_reply("oscillation, I think", debate(), TAXONOMY, "llm:x")[1] == [
        "oscillation: no round, agent and quote given"]


def judged(store, reply_by_question, runs):
    """Run the judge (scripted backend, one reply per question text) on each saved run."""
    book = LabelBook(store)
    backend = ScriptedBackend(lambda m: next(v for k, v in reply_by_question.items() if k in m[-1].content))
    for run_id in runs:
        verdict = asyncio.run(judge_transcript(backend, "scripted", store.get_run(run_id).transcript, TAXONOMY))
        save_verdict(book, run_id, verdict)
    return book


def quote(label, rnd, agent, value):
    return (f'LABEL: {label}\nTURN: round {rnd}, agent {agent}\n'
            f'QUOTE: "In round {rnd} I, agent {agent}, now say (({value}))"\n')


def test_agreement_with_adjudicated_labels_by_hand(tmp_path):
    store = RunStore(tmp_path / "runs.db", taxonomy=TAXONOMY)
    tasks = [dataclasses.replace(TASK, id=f"q{i}", question=f"Question number {i}?") for i in range(5)]
    runs = [save_run(store, debate(question=t)) for t in tasks]
    maj, osc = "majority_persuaded_correct_agent", "oscillation"
    replies = {"number 0": quote(maj, 2, 1, "A"), "number 1": quote(maj, 2, 1, "A"), "number 2": quote(osc, 2, 2, "A"),
               "number 3": "NONE", "number 4": quote(osc, 1, 1, "B")}
    book = judged(store, replies, [runs[0], runs[1], runs[2], runs[4]])  # run 3: adjudicated, never judged
    for run, labels in zip(runs[:4], [[maj], [], [maj, osc], [osc]]):
        book.set_final(run, labels, adjudicator="ada")
    scores = {s.label: s for s in judge_scores(book)}
    # over runs 0–2 (adjudicated and judged): maj truth 1,0,1 guess 1,1,0; osc truth 0,0,1 guess 0,0,1
    assert set(scores) == {maj, osc} and scores[maj].n == 3
    m = scores[maj]
    assert (m.true_pos, m.false_pos, m.false_neg, m.precision, m.recall) == (1, 1, 1, 0.5, 0.5)
    assert m.kappa == pytest.approx(-0.5)  # p_o = 1/3, p_e = 5/9: (1/3 − 5/9) / (1 − 5/9)
    o = scores[osc]
    assert (o.true_pos, o.false_pos, o.false_neg, o.kappa, o.precision, o.recall) == (1, 0, 0, 1.0, 1.0, 1.0)
    assert "| llm:scripted | oscillation | 3 | 1.0000 | 1.0000 | 1.0000 | 1 | 0 | 0 |" in judge_markdown(book)


def test_judge_suggestions_sit_beside_the_detectors_and_people_review_them(tmp_path):
    store = RunStore(tmp_path / "runs.db", taxonomy=TAXONOMY)
    run = save_run(store, debate())
    book = judged(store, {"largest": quote("majority_persuaded_correct_agent", 2, 1, "A")}, [run])
    book.detect()  # the detectors' pass keeps the judge's suggestion
    found = {s.detector: s for s in book.suggestions(run)}
    assert "llm:scripted" in found and "persuaded_by_wrong_majority" in found
    detectors = [s.detector for s in book.suggestions(run) if s.detector != "llm:scripted"]
    book.save_labels(run, "bo", ["oscillation"])
    assert found["llm:scripted"].id in {s.id for s in book.suggestions(run)}
    assert next(s for s in book.suggestions(run) if s.detector == "llm:scripted").reviews == {"bo": "rejected"}
    again = judged(store, {"largest": "NONE"}, [run])  # judging again replaces the judge's own suggestions only
    assert [s.detector for s in again.suggestions(run)] == detectors


def test_judge_command_on_a_loopback_server(tmp_path, config_dir, capsys):
    reply = (quote("majority_persuaded_correct_agent", 2, 1, "A")
             + '\nLABEL: oscillation\nround 1, agent 1 "no such words"')
    with FakeServer(models=["judge-model"], responder=lambda body: ok(reply)) as judge:
        spec = yaml.safe_load((config_dir / "backbones.yaml").read_text())
        spec["backbones"]["judge"] = {"base_url": judge.base_url, "model": "judge-model", "timeout_s": 30,
                                      "max_retries": 1}
        (config_dir / "backbones.yaml").write_text(yaml.safe_dump(spec))
        from r2mad.settings.config import load_config
        store = RunStore(load_config(config_dir).app.runs_db)
        run = save_run(store, debate())
        assert main(["--config-dir", str(config_dir), "judge", run[:8], "--backbone", "judge"]) == 0
        assert judge.hits == 1
    out = capsys.readouterr().out
    assert f"run {run[:8]}: llm:judge proposed 1 label(s), dropped 1" in out
    assert "dropped oscillation: the quote 'no such words' is not in round 1, agent 1's text" in out
    [s] = [s for s in LabelBook(store).suggestions(run) if s.detector == "llm:judge"]
    assert (s.label, s.round, s.agents) == ("majority_persuaded_correct_agent", 1, (0,))


def test_the_dataset_exports_judge_rows_as_kind_llm_and_imports_them_back(tmp_path):
    import pyarrow.parquet as pq

    from r2mad.exports.dataset import read_dataset, write_dataset

    store = RunStore(tmp_path / "runs.db", taxonomy=TAXONOMY)
    run = save_run(store, debate())
    book = judged(store, {"largest": quote("majority_persuaded_correct_agent", 2, 1, "A")}, [run])
    write_dataset(book, tmp_path / "ds")
    rows = [r for r in pq.read_table(tmp_path / "ds" / "labels.parquet").to_pylist() if r["kind"] == "llm"]
    assert [(r["label"], r["annotator"], r["round"], r["agent"]) for r in rows] == [
        ("majority_persuaded_correct_agent", "llm:scripted", 1, 0)]
    assert "1 LLM judge suggestions" in (tmp_path / "ds" / "README.md").read_text()
    fresh = LabelBook(RunStore(tmp_path / "b.db", taxonomy=TAXONOMY))
    read_dataset(fresh, tmp_path / "ds")
    assert sorted(s.detector for s in fresh.suggestions(run)) == sorted(s.detector for s in book.suggestions(run))
    assert "llm:scripted" in {s.detector for s in fresh.suggestions(run)}


def test_inspect_asks_the_judge_about_the_open_run_and_downloads_it_as_html(tmp_path):
    """The Inspect tab's buttons: "Ask the judge" (one call of the run's backbone, here a loopback server)
    and "Download HTML" for the open run and for the listed runs (a zip of pages)."""
    import zipfile
    from types import SimpleNamespace

    from r2mad.serving.services import Services
    from r2mad.settings.config import Backbone, load_config
    from r2mad.ui.inspect_tab import InspectHandlers

    reply = quote("majority_persuaded_correct_agent", 2, 1, "A")
    with FakeServer(models=["judge-model"], responder=lambda body: ok(reply)) as judge:
        config = load_config(env={"R2MAD_DATA_DIR": str(tmp_path / "var")})
        fake = Backbone(name="smollm2-135m", base_url=judge.base_url, model="judge-model", timeout_s=30, max_retries=0)
        config = dataclasses.replace(config, backbones={**config.backbones, "smollm2-135m": fake})
        h = InspectHandlers(Services(config))
        run, other = save_run(h.services.store, debate()), save_run(h.services.store, debate())
        request = SimpleNamespace(session_hash="s1", query_params={}, headers={}, cookies={})
        said = asyncio.run(h.ask_judge(run, None, request))
        assert judge.hits == 1 and "**The judge (llm:smollm2-135m)** proposed 1 label(s)" in said
        assert "`majority_persuaded_correct_agent`: the judge" in said
    [s] = [s for s in LabelBook(h.services.store).suggestions(run) if s.detector.startswith("llm:")]
    assert (s.label, s.round, s.agents) == ("majority_persuaded_correct_agent", 1, (0,))
    page = open(h.download_html(run, None, request), encoding="utf-8").read()
    assert page.lower().startswith("<!doctype html>") and f"Run {run}" in page and "<script" not in page
    assert "majority_persuaded_correct_agent" in page  # the judge's suggestion is on the page
    with zipfile.ZipFile(h.export_html([run, other], None, request)) as zf:
        assert sorted(zf.namelist()) == sorted([f"run-{run[:8]}.html", f"run-{other[:8]}.html"])
