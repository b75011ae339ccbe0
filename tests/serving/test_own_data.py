"""Your own data: `eval --data FILE|HF_ID --columns ... --kind K` on CSV, JSON lines, Parquet and a hub id read
from the local hub cache; a wrong column lists the file's columns; a real eval through the CLI."""
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from r2mad.cli import main
from r2mad.evaluation.datasets import DataError
from r2mad.evaluation.own_data import load_own, parse_columns
from r2mad.grading.answers import is_correct
from r2mad.types import Answer

CSV = ("q,a,opts,key\n"
       "Which planet is largest?,Jupiter,Mars|Jupiter|Venus,p1\n"
       "Which metal is liquid at room temperature?,0,\"[\"\"Mercury\"\", \"\"Iron\"\"]\",p2\n"
       "Pick the second letter of the alphabet,B,A|B|C,p3\n")


def test_csv_with_choices_maps_text_index_and_letter_answers_to_option_letters(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(CSV, encoding="utf-8")
    split = load_own(str(path), "question=q,answer=a,choices=opts,id=key")
    assert [(t.id, t.gold, t.kind) for t in split.tasks] == [("p1", "B", "mcq"), ("p2", "A", "mcq"), ("p3", "B", "mcq")]
    assert split.tasks[1].options == (("A", "Mercury"), ("B", "Iron")) and split.dataset == "own:mine.csv"
    assert len(load_own(str(path), "question=q,answer=a,choices=opts", limit=1).tasks) == 1


def test_jsonl_and_parquet_short_answers_with_a_kind(tmp_path):
    rows = [{"prompt": "Capital of Australia?", "label": "Canberra"},
            {"prompt": "Chemical symbol of gold?", "label": "Au"}]
    jl = tmp_path / "qa.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "qa.parquet")
    for path in (jl, tmp_path / "qa.parquet"):
        split = load_own(str(path), "question=prompt,answer=label", kind="short")
        assert [(t.question, t.gold, t.kind) for t in split.tasks] == [
            ("Capital of Australia?", "Canberra", "short"), ("Chemical symbol of gold?", "Au", "short")]
        assert len(set(split.ids)) == 2
    assert load_own(str(jl), "question=prompt").tasks[0].gold is None  # no answer column: unscored
    aliases = [{"prompt": "Sixth US president?", "label": ["John Quincy Adams", "J. Q. Adams", " "]}]
    for path in (tmp_path / "aliases.jsonl", tmp_path / "aliases.parquet"):
        if path.suffix == ".jsonl":
            path.write_text(json.dumps(aliases[0]) + "\n", encoding="utf-8")
        else:
            pq.write_table(pa.Table.from_pylist(aliases), path)
        [task] = load_own(str(path), "question=prompt,answer=label", kind="short").tasks
        assert task.gold == "John Quincy Adams | J. Q. Adams"  # a list column: every alias accepted
        assert is_correct(Answer("J. Q. Adams", "answer_colon"), task) is True
    with pytest.raises(ValueError, match="Unknown answer kind 'essay'; choose one of: math, mcq, integer"):
        load_own(str(jl), "question=prompt", kind="essay")


def test_a_wrong_column_lists_the_files_columns_in_one_sentence(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(CSV, encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_own(str(path), "question=question,answer=a")
    assert str(err.value) == f"{path} has no column 'question'; its columns are: q, a, opts, key."
    with pytest.raises(DataError, match="--columns takes ROLE=COLUMN pairs"):
        parse_columns("question=q,gold")
    with pytest.raises(DataError, match="must name the question's column"):
        parse_columns("answer=a")
    bad = tmp_path / "bad.csv"
    bad.write_text("q,a,opts\nWhich?,Pluto,Mars|Venus\n", encoding="utf-8")
    with pytest.raises(DataError, match="row 1: the answer 'Pluto' is neither an option letter"):
        load_own(str(bad), "question=q,answer=a,choices=opts")


def test_choices_from_several_columns_one_option_each_in_order(tmp_path):
    path = tmp_path / "options.csv"
    path.write_text("question,A,B,C,D,answer\n"
                    "Largest planet?,Mars,Jupiter,Venus,Earth,B\n"
                    "Liquid metal?,Iron,Mercury,,,1\n", encoding="utf-8")
    for choices in ("A|B|C|D", "A+B+C+D"):
        columns = f"question=question,choices={choices},answer=answer"
        split = load_own(str(path), columns)
        assert split.tasks[0].options == (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"), ("D", "Earth"))
        assert split.tasks[1].options == (("A", "Iron"), ("B", "Mercury"))  # blank cells left out
        assert [(t.gold, t.kind) for t in split.tasks] == [("B", "mcq"), ("B", "mcq")]
    assert load_own(str(path), "question=question,choices=D|C|B|A").tasks[0].options == (
        ("A", "Earth"), ("B", "Venus"), ("C", "Jupiter"), ("D", "Mars"))  # the order named
    with pytest.raises(DataError) as err:
        load_own(str(path), "question=question,choices=A|B|E")
    assert str(err.value) == f"{path} has no column 'E'; its columns are: question, A, B, C, D, answer."
    with pytest.raises(DataError, match=r"or choices=A\|B\|C\|D for one option a column\); 'choices=A\|\|B' is"):
        parse_columns("question=q,choices=A||B")


HEADERLESS = "What is 2+2?,3,4,5,6,B\nWhat is 3*3?,9,6,3,1,A\n"


def test_a_headerless_csv_is_said_to_be_one_and_reads_by_column_numbers(tmp_path):
    path = tmp_path / "astronomy_test.csv"
    path.write_text(HEADERLESS, encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_own(str(path), "question=question,answer=answer")
    assert str(err.value) == (f"{path} has no column 'question' and looks headerless (its first row reads like "
                              "data: 'What is 2+2?,3,4,5,6,B'); add a header row, or name the columns by number from "
                              "0, e.g. --columns question=0,answer=5.")
    split = load_own(str(path), "question=0,choices=1|2|3|4,answer=5")
    assert [(t.question, t.gold) for t in split.tasks] == [("What is 2+2?", "B"), ("What is 3*3?", "A")]
    assert split.tasks[1].options == (("A", "9"), ("B", "6"), ("C", "3"), ("D", "1"))
    with pytest.raises(DataError, match="has no column '7'; its columns are: 0, 1, 2, 3, 4, 5."):
        load_own(str(path), "question=0,answer=7")


def test_a_file_not_in_utf8_is_refused_in_one_sentence_naming_the_fix(tmp_path):
    csv_path = tmp_path / "french.csv"
    csv_path.write_text("q,a\nCapitale de la France?,Paris\nO\u00f9 est Lima?,P\u00e9rou\n", encoding="latin-1")
    json_path = tmp_path / "french.json"
    json_path.write_text(json.dumps([{"q": "P\u00e9rou?", "a": "Lima"}], ensure_ascii=False), encoding="latin-1")
    for path, line in ((csv_path, 3), (json_path, 1)):
        with pytest.raises(DataError) as err:
            load_own(str(path), "question=q,answer=a")
        assert str(err.value) == (
            f"{path.name} is not UTF-8 text (byte 0x{'f9' if line == 3 else 'e9'} on line {line} is not UTF-8, as in a "
            'Latin-1 or Windows-1252 file); save it as UTF-8 (a spreadsheet\'s "CSV UTF-8", or '
            f"`iconv -f latin1 -t utf-8 {path.name} > utf8-{path.name}`) and pass that file.")
    fixed = tmp_path / "utf8-french.csv"
    fixed.write_bytes(csv_path.read_bytes().decode("latin-1").encode("utf-8"))
    assert [t.gold for t in load_own(str(fixed), "question=q,answer=a").tasks] == ["Paris", "P\u00e9rou"]


def hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants
    cache = tmp_path / "hub"
    snapshot = cache / "datasets--me--trivia" / "snapshots" / ("c" * 40) / "data"
    snapshot.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"question": "Largest ocean?", "answer": "Pacific"}]),
                   snapshot / "test-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist([{"question": "Smallest planet?", "answer": "Mercury"},
                                         {"question": "Tallest mountain?", "answer": "Everest"}]),
                   snapshot / "train-00000-of-00001.parquet")
    (cache / "datasets--me--trivia" / "refs").mkdir()
    (cache / "datasets--me--trivia" / "refs" / "main").write_text("c" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))


def test_a_hub_id_reads_the_split_from_the_local_cache_and_offline_says_so(tmp_path, monkeypatch):
    hub_cache(tmp_path, monkeypatch)
    assert [t.gold for t in load_own("me/trivia", "question=question,answer=answer").tasks] == ["Pacific"]
    train = load_own("me/trivia", "question=question,answer=answer", split="train")
    assert [t.gold for t in train.tasks] == ["Mercury", "Everest"] and train.dataset == "own:me/trivia"
    with pytest.raises(DataError, match=r"has no files for the split 'validation'; it holds: data/test-00000"):
        load_own("me/trivia", "question=question", split="validation")
    with pytest.raises(DataError) as err:
        load_own("someone/else", "question=question")
    assert str(err.value).startswith("someone/else is not in the local Hugging Face cache and nothing is downloaded "
                                     "here (offline);")
    with pytest.raises(DataError, match="neither a data file"):
        load_own(str(tmp_path / "missing.csv"), "question=q")


def test_eval_runs_on_your_own_csv_through_the_cli(config_dir, tmp_path, capsys):
    path = tmp_path / "mine.csv"
    path.write_text(CSV, encoding="utf-8")
    out = tmp_path / "out"
    code = main(["--config-dir", str(config_dir), "eval", "--data", str(path), "--columns",
                 "question=q,answer=a,choices=opts,id=key", "--methods", "cot,mad", "--backbone", "fake",
                 "--limit", "2", "--no-progress", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert sorted((r["question_id"], r["method"], r["final"], r["correct"]) for r in rows) == [
        ("p1", "cot", "B", True), ("p1", "mad", "B", True), ("p2", "cot", "B", False), ("p2", "mad", "B", False)]
    assert "# own:mine.csv (test)" in (out / "report.md").read_text(encoding="utf-8")
    code = main(["--config-dir", str(config_dir), "eval", "--data", str(path), "--columns", "question=prompt",
                 "--out", str(tmp_path / "x")])
    assert code == 2 and "has no column 'prompt'; its columns are: q, a, opts, key." in capsys.readouterr().err


def test_on_a_space_only_signed_in_annotators_may_evaluate_their_own_data(tmp_path):
    import dataclasses
    import os
    from types import SimpleNamespace

    from r2mad.serving.visitors import identify
    from r2mad.settings.config import load_config
    from r2mad.ui.data_tab import researcher_refusal
    from tests.helpers import ROOT

    local = load_config(ROOT / "configs", env={**os.environ, "R2MAD_DATA_DIR": str(tmp_path)})
    space = load_config(ROOT / "configs", env={**os.environ, "R2MAD_DATA_DIR": str(tmp_path), "SPACE_ID": "me/demo"})
    space = dataclasses.replace(space, app=dataclasses.replace(space.app, annotators=("alice",)))
    anonymous = identify(space, browser_id="b" * 32, session="s")
    alice = identify(space, browser_id="b" * 32, session="s", profile=SimpleNamespace(username="alice"))
    assert researcher_refusal(local, identify(local, browser_id=None, session="s")) is None
    assert researcher_refusal(space, alice) is None
    refusal = researcher_refusal(space, anonymous)
    assert refusal.startswith("Evaluating your own data is for researchers") and refusal.count(". ") == 0


def test_an_eval_from_the_your_data_tab_waits_its_turn_in_the_apps_line(tmp_path):
    """The tab's eval enters the line the visitors' debates wait in: while another visitor's debate holds the
    only slot it calls nothing; once that debate ends it runs to its rows, one question at a time."""
    import asyncio
    import dataclasses

    from r2mad.evaluation.datasets import load_split
    from r2mad.evaluation.rows import EvalRun
    from r2mad.serving import own_eval
    from r2mad.serving.line import REMOTE
    from r2mad.serving.services import Services
    from testing.scripted_server import FakeServer, ok
    from tests.helpers import scripted_config

    with FakeServer(responder=lambda body: ok("Checked. ((B))")) as server:
        config = scripted_config(server.base_url, tmp_path / "var")
        services = Services(dataclasses.replace(config, app=dataclasses.replace(config.app,
                                                                                remote_concurrency_limit=1)))
        run = EvalRun(load_split("demo-mcq", "test", limit=2), ("cot",), "fake", config.settings, False)

        async def scenario():
            other = services.admission.enter("someone-else", REMOTE)  # their debate holds the only slot
            job = own_eval.start(run, services.in_line("me"), tmp_path / "out")
            for _ in range(200):  # until the eval's first question stands in the line (10 s at most)
                if services.admission.waiting_count(REMOTE):
                    break
                await asyncio.sleep(0.05)
            assert services.admission.waiting_count(REMOTE) == 1 and server.hits == 0
            services.admission.leave(other)
            await asyncio.wait_for(job.task, 60)

        asyncio.run(scenario())
        rows = [json.loads(x) for x in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert [(r["method"], r["final"]) for r in rows] == [("cot", "B"), ("cot", "B")] and server.hits >= 2
    assert not own_eval.busy()


def test_the_eval_estimate_is_recomputed_at_every_tick_from_the_rows_done(tmp_path, monkeypatch):
    """The Your data tab's bar: with no row done, waiting in the line, the estimate still moves between two ticks
    (the line's measured mean sets the pace); after the first row, the measured pace does."""
    from r2mad.serving import own_eval

    clock = [100.0]
    monkeypatch.setattr(own_eval.time, "monotonic", lambda: clock[0])
    out = tmp_path / "out"
    out.mkdir()
    job = own_eval.EvalJob(out, total=4, started=100.0, typical=lambda: 10.0)  # the line's debates: 10 s per row

    def line(at: float) -> str:
        clock[0] = 100.0 + at
        return re.search(r"\d+ of 4 rows · [^<]*", job.progress()).group(0)
    # 2 s in: the first row takes the rest of its 10 s, then 3 rows at 10 s: 8 + 30 = 38 s
    assert line(2) == "0 of 4 rows · about 0:38 left"
    assert line(4) == "0 of 4 rows · about 0:36 left"  # 6 + 30
    assert line(7) == "0 of 4 rows · about 0:37 left"  # past half its pace: as long again as it ran, 7 + 30
    (out / "rows.jsonl").write_text('{"method": "cot"}\n')  # the first row ends at 20 s: 20 s per row
    assert line(20) == "1 of 4 rows · about 1:00 left"  # the row under way 20 s, then 2 rows at 20 s
    assert line(25) == "1 of 4 rows · about 0:55 left"  # 15 + 40
    assert own_eval.eta_seconds(0, 4, 5.0) is None  # nothing measured yet: "estimating the time left…"
