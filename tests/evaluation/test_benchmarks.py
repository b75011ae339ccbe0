"""The seed papers' benchmarks by name, each read from small files written in its hub schema (parquet, csv,
json as the hub repos hold them), through a folder laid out like the repo or the local hub cache."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from r2mad.evaluation import benchmarks
from r2mad.evaluation.benchmarks import arithmetic, gpqa
from r2mad.evaluation.catalog import load_split
from r2mad.evaluation.datasets import DataError


def parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def gsm8k_repo(root: Path) -> Path:
    parquet(root / "main" / "test-00000-of-00001.parquet", [
        {"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"},
        {"question": "A shop sells 1,200 pens a day for 2 days. How many pens?", "answer": "2*1200=2400\n#### 2,400"}])
    parquet(root / "main" / "train-00000-of-00001.parquet", [
        {"question": "One plus one?", "answer": "#### 2"}])
    return root


def test_gsm8k_reads_the_number_after_the_hash_marks_and_keeps_the_hub_splits(tmp_path):
    root = gsm8k_repo(tmp_path / "gsm8k")
    test = load_split("gsm8k", "test", data_file=root)
    assert [t.gold for t in test.tasks] == ["7", "2400"]
    assert test.tasks[0].solution == "3 + 4 = <<3+4=7>>7" and test.tasks[0].kind == "math"
    assert len(load_split("gsm8k", "train", data_file=root).tasks) == 1
    assert len(load_split("gsm8k", "all", data_file=root).tasks) == 3
    assert len(set(load_split("gsm8k", "all", data_file=root).ids)) == 3  # ids follow the text, not the row
    assert benchmarks.lookup("gsm8k").sizes == {"test": 1319, "train": 7473}


def test_gsm8k_from_the_local_hub_cache_and_offline_in_one_sentence(tmp_path, monkeypatch):
    from huggingface_hub import constants
    cache = tmp_path / "hub"
    snapshot = cache / "datasets--openai--gsm8k" / "snapshots" / ("a" * 40)
    gsm8k_repo(snapshot)
    (cache / "datasets--openai--gsm8k" / "refs").mkdir(parents=True)
    (cache / "datasets--openai--gsm8k" / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    assert [t.gold for t in load_split("gsm8k", "test").tasks] == ["7", "2400"]
    with pytest.raises(DataError) as err:
        load_split("mmlu", "test")
    message = str(err.value)
    assert "cais/mmlu is not in the local Hugging Face cache" in message and "offline" in message
    assert message.count(".") <= 2 and "hf download cais/mmlu --repo-type dataset" in message


def test_math_in_full_by_level_with_gold_from_the_last_box(tmp_path):
    root = tmp_path / "math"
    parquet(root / "algebra" / "test-00000-of-00001.parquet", [
        {"problem": "Solve x+1=3.", "level": "Level 1", "type": "Algebra", "solution": "x = \\boxed{2}."},
        {"problem": "Simplify.", "level": "Level 5", "type": "Algebra",
         "solution": "First \\boxed{3}, finally \\boxed{\\frac{1}{2}}"}])
    parquet(root / "geometry" / "test-00000-of-00001.parquet", [
        {"problem": "Area?", "level": "Level 5", "type": "Geometry", "solution": "It is \\boxed{4\\pi}."}])
    full = load_split("math", "test", data_file=root)
    assert sorted(t.gold for t in full.tasks) == ["2", "4\\pi", "\\frac{1}{2}"]
    level5 = load_split("math-level-5", "test", data_file=root)
    assert sorted(t.gold for t in level5.tasks) == ["4\\pi", "\\frac{1}{2}"]
    assert benchmarks.lookup("math").sizes["test"] == 5000
    with pytest.raises(DataError, match="no level 3 problems"):
        load_split("math-level-3", "test", data_file=root)
    with pytest.raises(DataError, match="has no MATH train file"):
        load_split("math", "train", data_file=root)


def test_aime_years_are_integer_tasks_of_thirty_with_exact_answers(tmp_path):
    f24 = parquet(tmp_path / "aime24" / "data" / "train-00000-of-00001.parquet", [
        {"id": 60, "problem": "Find m+n.", "solution": "...", "answer": "204", "url": "u", "year": "2024"},
        {"id": 61, "problem": "Find the remainder.", "solution": "...", "answer": "033", "url": "u", "year": "2024"}])
    parquet(tmp_path / "aime25" / "data" / "train-00000-of-00001.parquet", [
        {"problem_idx": 1, "problem": "Find the sum.", "answer": 70}])
    s24 = load_split("aime2024", "test", data_file=f24)
    assert [(t.id, t.gold, t.kind) for t in s24.tasks] == [("aime2024-60", "204", "integer"),
                                                           ("aime2024-61", "33", "integer")]
    s25 = load_split("aime2025", "all", data_file=tmp_path / "aime25")
    assert [(t.id, t.gold) for t in s25.tasks] == [("aime2025-1", "70")]
    assert benchmarks.lookup("aime2025").sizes == {"test": 30}
    parquet(tmp_path / "bad.parquet", [{"problem": "p", "answer": "1000"}])
    with pytest.raises(DataError, match="row 1 has the answer '1000', which is not a whole number from 0 to 999"):
        load_split("aime2024", "test", data_file=tmp_path / "bad.parquet")


def test_aime_answers_as_copies_publish_them_read_as_whole_numbers(tmp_path):
    published = [70.0, "070", "336^\\circ", "$336$", "\\boxed{336}", "25 \\text{ cm}", '"204"', 0]
    rows = [{"problem_idx": i, "problem": f"Problem {i}.", "answer": a} for i, a in enumerate(published, 1)]
    path = tmp_path / "aime_2025.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    split = load_split("aime2025", "test", data_file=path)
    assert [t.gold for t in split.tasks] == ["70", "70", "336", "336", "336", "25", "204", "0"]
    assert split.tasks[2].id == "aime2025-3" and split.tasks[2].kind == "integer"
    refused = {"12.5": "row 2 has the answer '12.5', which is not a whole number from 0 to 999; correct it",
               "-3": "row 2 has the answer '-3', which is not a whole number from 0 to 999",
               "\\frac{1}{2}": "row 2 has the answer '\\\\frac{1}{2}', which is not a whole number"}
    for answer, message in refused.items():
        path.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"problem": "p", "answer": answer}) + "\n")
        with pytest.raises(DataError) as err:
            load_split("aime2025", "test", data_file=path)
        assert message in str(err.value) and str(err.value).count("; ") == 1
    path.write_text(json.dumps({"problem": "", "answer": "5"}) + "\n")
    with pytest.raises(DataError, match=r"row 1 has no problem; pass an AIME 2025 file with the columns problem"):
        load_split("aime2025", "test", data_file=path)
    path.write_text(json.dumps({"problem": "Find n.", "answer": None}) + "\n")
    with pytest.raises(DataError, match=r"row 1 has no answer; pass an AIME 2025 file"):
        load_split("aime2025", "test", data_file=path)


def test_gpqa_diamond_shuffles_options_with_a_seed_and_keeps_the_gold_letter(tmp_path):
    csv = tmp_path / "gpqa_diamond.csv"
    csv.write_text('Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3\n'
                   'rec1,"Which particle, if any, is charged?",electron,neutron,photon,neutrino\n'
                   'rec2,What is 2+2?,4,3,5,22\n', encoding="utf-8")
    first = load_split("gpqa-diamond", "test", data_file=csv, seed=0)
    again = load_split("gpqa-diamond", "test", data_file=csv, seed=0)
    other = load_split("gpqa-diamond", "test", data_file=csv, seed=7)
    for task in first.tasks:
        assert dict(task.options)[task.gold] in ("electron", "4")  # the gold letter points at the correct text
        assert sorted(text for _, text in task.options) in (sorted(["electron", "neutron", "photon", "neutrino"]),
                                                             sorted(["4", "3", "5", "22"]))
    assert first.tasks == again.tasks and first.tasks[0].question == "Which particle, if any, is charged?"
    orders = {load_split("gpqa-diamond", "test", data_file=csv, seed=s).tasks[0].options for s in range(20)}
    assert len(orders) > 3  # the seed moves the options
    assert other.ids == first.ids == ("gpqa-rec1", "gpqa-rec2")
    options, gold = gpqa.shuffled_options({"Question": "q", "Correct Answer": "c", "Incorrect Answer 1": "w1",
                                           "Incorrect Answer 2": "w2", "Incorrect Answer 3": "w3"}, 3)
    assert dict(options)[gold] == "c" and benchmarks.lookup("gpqa-diamond").sizes == {"test": 198}
    bad = tmp_path / "bad.csv"
    bad.write_text("Question,Correct Answer\nq,a\n", encoding="utf-8")
    with pytest.raises(DataError, match="lacks the column 'Incorrect Answer 1'.*file has Question, Correct Answer"):
        load_split("gpqa-diamond", "test", data_file=bad)


def test_mmlu_subjects_from_the_all_config(tmp_path):
    root = tmp_path / "mmlu"
    parquet(root / "all" / "test-00000-of-00001.parquet", [
        {"question": "2+2?", "subject": "elementary_mathematics", "choices": ["3", "4", "5", "6"], "answer": 1},
        {"question": "Capital of France?", "subject": "high_school_geography",
         "choices": ["Rome", "Paris", "Oslo", "Bern"], "answer": 1},
        {"question": "3*3?", "subject": "elementary_mathematics", "choices": ["9", "6", "3", "1"], "answer": 0}])
    every = load_split("mmlu", "test", data_file=root)
    assert [t.gold for t in every.tasks] == ["B", "B", "A"] and every.tasks[0].options[1] == ("B", "4")
    maths = load_split("mmlu-elementary_mathematics", "test", data_file=root)
    assert [t.question for t in maths.tasks] == ["2+2?", "3*3?"]
    with pytest.raises(DataError, match="no questions of the subject 'astronomy'"):
        load_split("mmlu-astronomy", "test", data_file=root)
    assert benchmarks.lookup("mmlu-pro-economics") is None  # MMLU-Pro stays datasets.py's


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding=encoding)
    return path


def hendrycks_folder(root: Path) -> Path:
    """Hendrycks' data.tar layout: data/<split>/<subject>_<split>.csv, no header, question, A-D, answer letter."""
    write(root / "data" / "test" / "astronomy_test.csv",
          'What is closest to the Sun?,Venus,Mercury,Earth,Mars,B\n'
          '"Which is a star, not a planet?",Sirius,Jupiter,Saturn,Neptune,A\n')
    write(root / "data" / "test" / "elementary_mathematics_test.csv", "What is 2+2?,3,4,5,6,B\n")
    write(root / "data" / "dev" / "astronomy_dev.csv", "Our galaxy?,Andromeda,Milky Way,Triangulum,M87,B\n")
    write(root / "data" / "auxiliary_train" / "arc_easy.csv", "Not MMLU?,a,b,c,d,A\n")  # not a split's file
    return root


def test_mmlu_from_hendrycks_per_subject_csvs_a_folder_or_one_file(tmp_path):
    root = hendrycks_folder(tmp_path / "mmlu")
    test = load_split("mmlu", "test", data_file=root)
    assert [(t.source, t.question, t.gold) for t in test.tasks] == [
        ("mmlu-astronomy", "What is closest to the Sun?", "B"),
        ("mmlu-astronomy", "Which is a star, not a planet?", "A"),
        ("mmlu-elementary_mathematics", "What is 2+2?", "B")]
    assert test.tasks[0].options == (("A", "Venus"), ("B", "Mercury"), ("C", "Earth"), ("D", "Mars"))
    assert [t.question for t in load_split("mmlu", "train", data_file=root / "data").tasks] == ["Our galaxy?"]
    assert len(load_split("mmlu", "test", data_file=root / "data" / "test").tasks) == 3  # the folder of the CSVs
    assert len(load_split("mmlu", "all", data_file=root).tasks) == 4  # test and dev
    astronomy = load_split("mmlu-astronomy", "test", data_file=root)
    assert [t.gold for t in astronomy.tasks] == ["B", "A"]
    one = load_split("mmlu", "test", data_file=root / "data" / "test" / "elementary_mathematics_test.csv")
    assert [(t.source, t.gold) for t in one.tasks] == [("mmlu-elementary_mathematics", "B")]
    hub = parquet(tmp_path / "hub" / "all" / "test-00000-of-00001.parquet", [
        {"question": "What is 2+2?", "subject": "elementary_mathematics", "choices": ["3", "4", "5", "6"],
         "answer": 1}])
    assert load_split("mmlu", "test", data_file=hub).ids == one.ids  # the same question, the same id


def test_mmlu_from_a_csv_with_a_header_and_option_columns(tmp_path):
    by_index = write(tmp_path / "mine.csv", "question,choice0,choice1,choice2,choice3,answer\n"
                                            "What is 3*3?,6,9,12,3,1\nWhat is 10/2?,5,2,20,8,0\n")
    split = load_split("mmlu", "test", data_file=by_index)
    assert [(t.source, t.gold) for t in split.tasks] == [("mmlu-mine", "B"), ("mmlu-mine", "A")]
    assert split.tasks[0].options[1] == ("B", "9")
    by_letter = write(tmp_path / "virology_val.csv", "question,A,B,C,D,answer,subject\n"
                                                     "Which is a virus?,E. coli,Influenza,Yeast,Amoeba,b,virology\n"
                                                     "What is 1+1?,1,2,3,4,B,elementary_mathematics\n")
    split = load_split("mmlu", "test", data_file=by_letter)
    assert [(t.source, t.gold) for t in split.tasks] == [("mmlu-virology", "B"), ("mmlu-elementary_mathematics", "B")]
    assert [t.question for t in load_split("mmlu-virology", "test", data_file=by_letter).tasks] == ["Which is a virus?"]
    bad = write(tmp_path / "bad.csv", "question,A,B,C,D,answer\nWhich?,w,x,y,z,E\n")
    with pytest.raises(DataError, match=r"bad.csv row 1 needs a list of choices and an answer \(an index"):
        load_split("mmlu", "test", data_file=bad)
    other = write(tmp_path / "other.csv", "Question,Option A,Option B,Answer\nWhich?,x,y,A\n")
    with pytest.raises(DataError, match="lacks the column 'question'.*this file has Question, Option A, Option B"):
        load_split("mmlu", "test", data_file=other)


def test_a_csv_not_in_utf8_is_refused_in_one_sentence_naming_the_fix(tmp_path):
    latin = write(tmp_path / "data" / "test" / "french_test.csv", "Où est Paris?,France,Italie,Chili,Pérou,A\n",
                  encoding="latin-1")
    with pytest.raises(DataError) as err:
        load_split("mmlu", "test", data_file=latin)
    message = str(err.value)
    assert message.startswith("french_test.csv is not UTF-8 text (byte 0xf9 on line 1 is not UTF-8")
    assert "save it as UTF-8" in message and "iconv -f latin1 -t utf-8 french_test.csv" in message
    assert message.count("; ") == 1 and message.endswith("and pass that file.")


def test_arithmetic_is_generated_from_a_seed_with_the_value_computed():
    rows = arithmetic.generate(0, 100)
    assert len(rows) == 100 and all(0 <= x <= 29 for r in rows for x in r["numbers"])
    for r in rows:
        a, b, c, d, e, f = r["numbers"]
        assert r["answer"] == a + b * c + d - e * f
    split = load_split("arithmetic", "test", seed=0)
    assert len(split.tasks) == 100 and split.tasks == load_split("arithmetic", "test", seed=0).tasks
    first = split.tasks[0]
    assert "12+15*21+0-3*27" in first.question and first.gold == "246"  # 12 + 315 + 0 - 81
    assert load_split("arithmetic", "test", seed=1).tasks[0].question != first.question
    assert load_split("arithmetic", "train").tasks == ()


def test_biographies_in_the_authors_format_and_order(tmp_path):
    people = {f"Person {i}": f"- Person {i} was born in City {i}.\n- Person {i} won prize {i}.\n" for i in range(6)}
    people["Ada Lovelace"] = ["Ada Lovelace wrote the first program.", "  * She worked with Charles Babbage."]
    article = tmp_path / "article.json"
    article.write_text(json.dumps(people), encoding="utf-8")
    split = load_split("biographies", "test", data_file=article)
    import random
    order = sorted(people)
    random.Random(1).shuffle(order)
    assert [t.solution for t in split.tasks] == order  # the authors' order: --limit 40 is their 40
    ada = next(t for t in split.tasks if t.solution == "Ada Lovelace")
    assert ada.gold.splitlines() == ["Ada Lovelace wrote the first program.", "She worked with Charles Babbage."]
    assert ada.kind == "open" and "Ada Lovelace" in ada.question
    with pytest.raises(DataError, match="not on the hub"):
        load_split("biographies", "test")


def test_unknown_benchmark_names_every_choice():
    with pytest.raises(ValueError) as err:
        load_split("gsm9k", "test")
    for name in ("gsm8k", "math", "aime2024", "aime2025", "gpqa-diamond", "mmlu", "arithmetic", "biographies",
                 "truthfulqa"):
        assert name in str(err.value)
