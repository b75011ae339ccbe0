"""`fork`, `blame` and mixed-model debates from the command line, against scripted OpenAI-compatible
servers on loopback: saved runs, links to the parent, calls counted where the server received them."""
import json
import shutil

import pytest
import yaml

from r2mad.cli import main
from r2mad.runs.store import RunStore
from r2mad.settings.config import load_config
from r2mad.steer.links import fork_of
from testing.scripted_server import FakeServer, ok
from tests.helpers import ROOT, SYSTEMS, herd, make_bank

QUESTION = ["--question", "Largest planet?", "--option", "A=Mars", "--option", "B=Jupiter", "--gold", "B"]


def bank_config(tmp_path, server):
    """A config on `server` with a small memory bank at tmp_path/memory/tiny (hash embedder: no model)."""
    folder = make_config(tmp_path, fake=server)
    app_yaml = folder / "app.yaml"
    app_yaml.write_text(app_yaml.read_text().replace("embedder: all-MiniLM-L6-v2", "embedder: hash-64"))
    make_bank(tmp_path / "memory")
    return folder


def make_config(tmp_path, **servers):
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder, dirs_exist_ok=True)
    (folder / "backbones.yaml").write_text(yaml.safe_dump({"default": next(iter(servers)), "backbones": {
        name: {"base_url": srv.base_url, "model": "fake-model", "timeout_s": 5, "max_retries": 0}
        for name, srv in servers.items()}}))
    return folder


def run(folder, *args):
    return main(["--config-dir", str(folder), *args])


def store():
    return RunStore(load_config().app.runs_db)


@pytest.fixture
def herd_server():
    with FakeServer(responder=herd) as srv:
        yield srv


def test_fork_a_saved_run_from_the_command_line(tmp_path, herd_server, capsys):
    folder = make_config(tmp_path, fake=herd_server)
    assert run(folder, "debate", *QUESTION, "--no-early-stop") == 0
    [parent] = store().list_runs()
    assert parent.final_answer == "A" and parent.correct is False and herd_server.hits == 9
    capsys.readouterr()
    assert run(folder, "fork", parent.id, "--from-round", "1", "--answer", "1=B") == 0
    out = capsys.readouterr().out
    assert herd_server.hits == 9 + 6  # rounds 1 and 2 only: round 0 was replayed
    assert "Round 0 (replayed from the record)" in out and "fork: answer forced (was A)" in out
    assert "6 model calls made, none for the replayed rounds" in out
    assert "B* B B (replayed)" in out and "B (correct)" in out  # the aligned view: parent A, fork B
    fork_id = next(r.id for r in store().list_runs() if r.id != parent.id)
    parent_id, spec = fork_of(store(), fork_id)
    assert parent_id == parent.id and spec.from_round == 1 and spec.changes[0].value == "B"
    assert store().forks_of(parent.id) == [fork_id]
    fork = store().get_run(fork_id)
    assert fork.correct is True
    assert fork.transcript.rounds[0].turns[0].details["steer"]["original_text"] == "Mars. ((A))"


def test_fork_refuses_bad_input_in_one_sentence(tmp_path, herd_server, capsys):
    folder = make_config(tmp_path, fake=herd_server)
    assert run(folder, "debate", *QUESTION) == 0
    [parent] = store().list_runs()
    capsys.readouterr()
    for args, problem in ((["--from-round", "7"], "fork from a round between 1 and"),
                          (["--from-round", "1", "--answer", "1=Q"], "not an option"),
                          (["--from-round", "1", "--method", "nope"], "Unknown method 'nope'")):
        hits = herd_server.hits
        assert run(folder, "fork", parent.id, *args) == 2
        err = capsys.readouterr().err
        assert problem in err and err.count("\n") == 1 and herd_server.hits == hits
        assert store().count_runs() == 1  # nothing saved for a refused fork
    assert run(folder, "fork", "no-such-run", "--from-round", "1") == 2
    assert "No run 'no-such-run'" in capsys.readouterr().err


def test_blame_finds_the_turn_that_caused_the_failure(tmp_path, herd_server, capsys):
    folder = make_config(tmp_path, fake=herd_server)
    assert run(folder, "debate", *QUESTION, "--no-early-stop") == 0
    [parent] = store().list_runs()
    capsys.readouterr()
    hits = herd_server.hits
    assert run(folder, "blame", parent.id, "--budget", "40") == 0
    out = capsys.readouterr().out
    rows = store().blame_of(parent.id)
    assert [(b.round, b.agent, b.neutraliser) for b in rows if b.correct] == [(0, 0, "mask")]
    assert "round 0 agent 1 mask     -> turns it CORRECT" in out
    spent = sum(b.calls for b in rows)
    assert spent == herd_server.hits - hits <= 40  # every call counted, within budget
    assert all(fork_of(store(), b.fork_id)[0] == parent.id for b in rows)
    hits = herd_server.hits
    assert run(folder, "blame", parent.id, "--budget", "2") == 0  # too small for any replay with calls
    assert herd_server.hits == hits and "left out for the budget" in capsys.readouterr().out


def test_each_agent_calls_its_own_server_and_judges_go_to_the_aux_backbone(tmp_path, capsys):
    with FakeServer(responder=herd) as left, FakeServer(responder=herd) as right:
        folder = make_config(tmp_path, left=left, right=right)
        out = tmp_path / "t.json"
        assert run(folder, "debate", *QUESTION, "--no-early-stop", "--agent-backbones", "left,right,left",
                   "--json", str(out)) == 0
        assert (left.hits, right.hits) == (6, 3)
        assert {r.body["messages"][0]["content"] for r in right.requests} == {SYSTEMS[1]}
        assert {r.body["messages"][0]["content"] for r in left.requests} == {SYSTEMS[0], SYSTEMS[2]}
        printed = capsys.readouterr().out
        assert "Agent 2 (Fact-checker) on right: answer B" in printed
        assert "Usage by model: left: 6 calls" in printed and "right: 3 calls" in printed
        data = json.loads(out.read_text())
        assert [[t["backbone"] for t in r["turns"]] for r in data["rounds"]] == [["left", "right", "left"]] * 3
        [saved] = store().list_runs()
        assert saved.backbone == "left,right,left"
        assert run(folder, "rerun", saved.id) == 0 and (left.hits, right.hits) == (12, 6)  # the same agents again
        assert run(folder, "fork", saved.id, "--from-round", "2") == 0
        assert (left.hits, right.hits) == (14, 7)  # a fork keeps each agent on its own backbone
        assert run(folder, "fork", saved.id, "--from-round", "2", "--backbone", "right") == 0
        assert (left.hits, right.hits) == (14, 10)  # unless told otherwise

        left.hits = right.hits = 0
        assert run(folder, "debate", *QUESTION, "--no-early-stop", "--method", "madm2-subjective",
                   "--agent-backbones", "left,left,left", "--aux-backbone", "right") == 0
        judges = [r for r in right.requests if r.body["messages"][0]["content"] not in SYSTEMS]
        assert right.hits == len(judges) == 2 * 3 and left.hits == 9  # 3 judgments in each of 2 rounds


def test_agent_backbones_must_match_the_agents(tmp_path, herd_server, capsys):
    folder = make_config(tmp_path, fake=herd_server)
    assert run(folder, "debate", *QUESTION, "--agent-backbones", "fake,fake") == 2
    err = capsys.readouterr().err
    assert "2 agent backbones were given for 3 agents" in err and herd_server.hits == 0


def test_a_fork_keeps_its_link_through_export_and_import(tmp_path, herd_server, monkeypatch, capsys):
    folder = make_config(tmp_path, fake=herd_server)
    assert run(folder, "debate", *QUESTION, "--no-early-stop") == 0
    [parent] = store().list_runs()
    assert run(folder, "fork", parent.id, "--from-round", "2", "--mask", "3") == 0
    assert run(folder, "export", "--out", str(tmp_path / "runs.jsonl")) == 0
    monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / "elsewhere"))
    assert run(folder, "import", str(tmp_path / "runs.jsonl")) == 0
    [fork_id] = store().forks_of(parent.id)
    parent_id, spec = fork_of(store(), fork_id)
    assert parent_id == parent.id and spec.from_round == 2 and spec.changes[0].kind == "mask"


@pytest.mark.slow  # builds a Qdrant index on disk
def test_a_mad_run_forked_into_r2mad_retrieves_from_the_named_bank(tmp_path, herd_server, capsys):
    folder = bank_config(tmp_path, herd_server)
    assert run(folder, "debate", *QUESTION, "--no-early-stop") == 0
    [parent] = store().list_runs()
    capsys.readouterr()
    assert run(folder, "fork", parent.id, "--from-round", "2", "--method", "r2mad",
               "--bank", str(tmp_path / "memory" / "tiny")) == 0
    fork = store().get_run(store().forks_of(parent.id)[0])
    assert fork.method == "r2mad" and fork.bank == str(tmp_path / "memory" / "tiny")
    turns = fork.transcript.rounds[2].turns
    assert [t.details["retrieved"][0]["case_id"] for t in turns if t.agent < 2] == ["case-0", "case-1"]
    assert "retrieved case-0" in capsys.readouterr().out


@pytest.mark.slow  # builds a Qdrant index on disk, reads the multilingual embedder
def test_a_question_that_may_be_a_bank_question_in_another_language_runs_without_its_cases(tmp_path, herd_server,
                                                                                          capsys):
    folder = bank_config(tmp_path, herd_server)
    bank = str(tmp_path / "memory" / "tiny")
    options = ["--option", "A=Mars", "--option", "B=Neptun", "--gold", "B"]
    assert run(folder, "debate", "--question", "Welcher Planet ist rot?", *options, "--bank", bank,
               "--method", "r2mad") == 2  # "Which planet is red?" surely: refused, nothing called
    assert "means the same as this one ('Which planet is red?'" in capsys.readouterr().err
    assert herd_server.hits == 0
    assert run(folder, "debate", "--question", "Welcher Planet ist blau?", *options, "--bank", bank,
               "--method", "r2mad", "--no-early-stop") == 0  # maybe "Which planet is red?": runs without it
    [saved] = store().list_runs()
    t = store().get_run(saved.id).transcript
    assert "Memory: the cases of 1 bank question left out, which this one may be in another language." in t.notices
    retrieved = {c["case_id"] for r in t.rounds[1:] for turn in r.turns for c in turn.details.get("retrieved", ())}
    assert retrieved == {"case-2"}  # Peru's, agent 0's other case; agent 1 had only the withheld one


def strict_judge(body):
    """herd, but the judge says NO to a response that answers A (Mars)."""
    messages = body["messages"]
    if messages[0]["content"] not in SYSTEMS:
        wrong = "((A))" in messages[-1]["content"]
        return ok("Wrong planet. <label>NO</label>" if wrong else "Fine. <label>YES</label>")
    return herd(body)


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_fork_with_unmask_drop_advice_from_the_command_line(tmp_path, capsys):
    with FakeServer(responder=strict_judge) as srv:
        folder = make_config(tmp_path, fake=srv)
        assert run(folder, "debate", *QUESTION, "--no-early-stop", "--method", "madm2-subjective") == 0
        [parent] = store().list_runs()
        shown = store().get_run(parent.id).transcript.rounds[1].turns[1].details["shown"]
        assert shown == [1, 2]  # agent 1's A was masked
        hits = srv.hits
        assert run(folder, "fork", parent.id, "--from-round", "1", "--unmask", "1") == 0
        assert srv.hits == hits + 2 * (3 + 3)  # rounds 1 and 2: three judgments and three agents each
        out = capsys.readouterr().out
        assert "agent 1 unmasked at round 1" in out and "fork: shown unmasked: agent 1" in out
        fork_id = store().forks_of(parent.id)[0]
        fork = store().get_run(fork_id).transcript
        assert fork.rounds[1].details["masks"]["all"]["0"]["steer"] == "unmasked"
        assert [t.details["shown"] for t in fork.rounds[1].turns] == [[0, 1, 2]] * 3
        assert fork_of(store(), fork_id)[1].changes[0].kind == "unmask"

        assert run(folder, "debate", *QUESTION, "--no-early-stop", "--method", "truemad") == 0
        parent = next(r for r in store().list_runs() if r.method == "truemad")
        hits = srv.hits
        assert run(folder, "fork", parent.id, "--from-round", "1", "--drop-advice", "1=2") == 0
        assert srv.hits == hits + (5 + 3) + (6 + 3)  # round 1 without the dropped advice, round 2 whole
        asked = [r.body["messages"][-1]["content"] for r in srv.requests[hits:hits + 5]]
        assert sum("addressed only to Agent 1" in text for text in asked) == 1  # agent 3's, not agent 2's
        out = capsys.readouterr().out
        assert "advice from agent 2 dropped at round 1" in out
        assert "fork: advice from agent 2 dropped (not asked for)" in out
        fork_id = store().forks_of(parent.id)[0]
        _, spec = fork_of(store(), fork_id)
        assert (spec.changes[0].kind, spec.changes[0].agent, spec.changes[0].value) == ("drop-advice", 0, "2")
        hits = srv.hits
        assert run(folder, "fork", parent.id, "--from-round", "1", "--unmask", "2") == 2
        err = capsys.readouterr().err
        assert "Unmasking a response acts on MAD-M²'s masks, which 'truemad' does not have" in err
        assert srv.hits == hits and len(store().forks_of(parent.id)) == 1  # refused: nothing called or saved


@pytest.mark.slow  # builds a Qdrant index on disk
def test_an_r2mad_run_forked_with_drop_case(tmp_path, herd_server, capsys):
    folder = bank_config(tmp_path, herd_server)
    bank = str(tmp_path / "memory" / "tiny")
    assert run(folder, "debate", *QUESTION, "--no-early-stop", "--method", "r2mad", "--bank", bank) == 0
    [parent] = store().list_runs()
    assert store().get_run(parent.id).transcript.rounds[1].turns[0].details["retrieved"][0]["case_id"] == "case-0"
    capsys.readouterr()
    hits = herd_server.hits
    assert run(folder, "fork", parent.id, "--from-round", "1", "--drop-case", "1=1") == 0
    out = capsys.readouterr().out
    assert "agent 1 case 1 dropped at round 1" in out and "fork: case 1 (case-0) dropped" in out
    fork = store().get_run(store().forks_of(parent.id)[0]).transcript
    turn = fork.rounds[1].turns[0]
    assert turn.details["retrieved"] == [] and turn.details["steer"] == {"drop-case": 1, "dropped": "case-0"}
    assert "<memory case" not in turn.prompt[-1].content
    assert "<memory case 1>" in fork.rounds[1].turns[1].prompt[-1].content
    assert herd_server.hits - hits == live_calls(fork)
    assert run(folder, "fork", parent.id, "--from-round", "1", "--drop-case", "1=2") == 2
    assert "no case at rank 2; give a rank between 1 and 1" in capsys.readouterr().err
    assert run(folder, "fork", parent.id, "--from-round", "1", "--replace-case", "1=1:case-1") == 2
    assert "belongs to agent 2's memory, not agent 1's" in capsys.readouterr().err
    assert run(folder, "fork", parent.id, "--from-round", "1", "--replace-case", "1=1:case-2") == 0
    fork = store().get_run(store().forks_of(parent.id)[-1]).transcript
    assert fork.rounds[1].turns[0].details["steer"] == {"replace-case": 1, "replaced": "case-0", "by": "case-2"}


def live_calls(t):
    from r2mad.steer.fork import live_usage
    return live_usage(t).calls


def coin(body):
    """herd with a coin from each call's seed: u = (seed // 100000) % 4 (blame --samples gives sample k the
    seed + (k + 1) * 100000). Shown an A: A unless u == 1; shown none: B unless u == 0."""
    messages, u = body["messages"], (body["seed"] // 100_000) % 4
    if len(messages) == 2:
        return ok("Mars. ((A))" if SYSTEMS.index(messages[0]["content"]) == 0 else "Jupiter. ((B))")
    if "((A))" in messages[-1]["content"]:
        return ok("Going along. ((A))" if u != 1 else "Jupiter. ((B))")
    return ok("Jupiter. ((B))" if u != 0 else "Mars after all. ((A))")


def test_blame_samples_reports_the_change_in_p_correct_with_an_interval(tmp_path, capsys):
    from r2mad.runs.counterfactuals import samples_of

    with FakeServer(responder=coin) as server:
        folder = make_config(tmp_path, fake=server)
        assert run(folder, "debate", *QUESTION, "--no-early-stop", "--seed", "3") == 0
        [parent] = store().list_runs()
        assert parent.correct is False
        capsys.readouterr()
        hits = server.hits
        assert run(folder, "blame", parent.id, "--samples", "4", "--budget", "200") == 0
        # round 1's five changes and their baseline (6 x 4 x 3 = 72), round 0's mask and its baseline (2 x 4 x 6)
        assert server.hits - hits == 120
    out = capsys.readouterr().out
    # agent 1's round-0 A hidden: right unless u == 0 (3 of k + 1 = 1..4); as it was: right only when u == 1
    assert "round 0 agent 1 mask" in out and "P(correct) 3/4 vs 1/4 as it was: change +0.50 [95% CI" in out
    assert "120 calls of a budget of 200 (the baselines included)" in out
    best = samples_of(store(), parent.id)[0]
    assert (best.turns, best.correct, best.samples, best.base_correct, len(best.fork_ids)) == (
        ((0, 0, "mask"),), 3, 4, 1, 4)
