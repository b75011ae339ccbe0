"""The eval report on a tiny hand-made results folder: 4 multiple-choice questions (gold B), 3 agents,
methods CoT, MAD, TrueMAD (MAD's answers plus advice calls), R²-MAD and R²-MAD w/o confidence.
Every figure below is worked out by hand in the comments."""
import json
import random

import pytest

from r2mad.evaluation.report import consensus_curve, load_results, write_report
from r2mad.evaluation.rows import ROWS, RUN
from r2mad.types import (
    UNPARSED,
    AgentTurn,
    Answer,
    AuxCall,
    Round,
    Task,
    Transcript,
    to_dict,
)
from tests.helpers import jsonl_values

METHODS = ["cot", "mad", "truemad", "r2mad", "r2mad-no-confidence"]
EARLY = "All agents agree after round 1; stopping early."
MEMORY_OFF = "Memory off: no memory bank was given; this runs without retrieved cases."

# Answers per round (None = UNPARSED). Debate methods share round 0.
#   q1 r0 [B,A,A]  q2 r0 [B,B,A]  q3 r0 [B,A,C]  q4 r0 [A,A,A]
ANSWERS = {
    "cot": [[["B"]], [["B"]], [["A"]], [[None]]],
    "mad": [[["B", "A", "A"], ["A", "A", "B"], ["A", "A", "B"]],
            [["B", "B", "A"], ["B", "B", "B"]],
            [["B", "A", "C"]] * 3,
            [["A", "A", "A"]]],
    "r2mad": [[["B", "A", "A"], ["B", "A", "B"], ["B", "B", "B"]],
              [["B", "B", "A"], ["B", "B", "B"]],
              [["B", "A", "C"], ["B", "B", "C"], ["B", "B", "B"]],
              [["A", "A", "A"]]],
    "r2mad-no-confidence": [[["B", "A", "A"], ["A", "A", "A"]],
                            [["B", "B", "A"], ["B", "B", "B"]],
                            [["B", "A", "C"], ["B", "B", "A"], ["B", "B", "A"]],
                            [["A", "A", "A"]]],
}
ANSWERS["truemad"] = ANSWERS["mad"]
FINALS = {"cot": ["B", "B", "A", None], "mad": ["A", "B", "B", "A"], "truemad": ["A", "B", "B", "A"],
          "r2mad": ["B", "B", "B", "A"], "r2mad-no-confidence": ["A", "B", "B", "A"]}
SECONDS = {"cot": [1, 2, 3, 4], "mad": [10, 20, 30, 40], "truemad": [20, 30, 40, 50],
           "r2mad": [12, 22, 32, 42], "r2mad-no-confidence": [11, 21, 31, 41]}


def _aux(method, index):
    if method == "truemad":  # 3 agents x 2 peers = 6 advice calls of 40 + 10 tokens per debate round
        return tuple(AuxCall("advice", index, "advice", 40, 10, source=s, target=t)
                     for s in range(3) for t in range(3) if s != t)
    if method.startswith("r2mad"):  # one summary of 150 + 50 tokens per debate round
        return (AuxCall("summary", index, "h", 150, 50),)
    return ()


def transcript(method, q):
    task = Task("mcq", f"Question {q}?", (("A", "a"), ("B", "b"), ("C", "c")), "B", f"q{q}", "demo-mcq")
    rounds = []
    for index, values in enumerate(ANSWERS[method][q - 1]):
        turns = tuple(AgentTurn(a, index, "p", (), f"(({v}))" if v else "no idea",
                                Answer(v, "double_paren") if v else UNPARSED, 300, 100)
                      for a, v in enumerate(values))  # 400 tokens per agent turn
        rounds.append(Round(index, turns, 0.0, _aux(method, index) if index else ()))
    final = FINALS[method][q - 1]
    notices = (MEMORY_OFF,) if method == "r2mad" else ()
    last = ANSWERS[method][q - 1][-1]
    if method != "cot" and len(rounds) < 3 and len(set(last)) == 1:
        notices += (EARLY,)
    return Transcript(task, method, "scripted", {}, tuple(rounds),
                      Answer(final, "double_paren") if final else UNPARSED, final == "B", notices=notices)


def make_folder(path, order=None):
    path.mkdir(parents=True, exist_ok=True)
    settings = {"agents": 3, "rounds": 3, "temperature": 0.7, "max_tokens": 384, "early_stop": True}
    run = {"dataset": "demo-mcq", "split": "test", "split_seed": 0, "question_ids": ["q1", "q2", "q3", "q4"],
           "methods": METHODS, "backbone": "scripted", "seed": 0, "settings": settings,
           "share_round0": True, "code_version": "0.1.0", "limit": None, "data_file": None,
           "prices": {"input_per_m": 0.2, "output_per_m": 0.6}}
    (path / RUN).write_text(json.dumps(run), encoding="utf-8")
    rows = [{"question_index": q - 1, "question_id": f"q{q}", "method": meth, "seconds": SECONDS[meth][q - 1],
             "call_seconds": SECONDS[meth][q - 1] / 10, "status": "done", "transcript": to_dict(transcript(meth, q))}
            for q in range(1, 5) for meth in METHODS]
    if order is not None:
        random.Random(order).shuffle(rows)
    (path / ROWS).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def section(report, title):
    """Table lines (header excluded) of the section whose heading starts with `title`."""
    block = report.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return [line for line in block.splitlines() if line.startswith("| ")][1:]


def cells(line):
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = make_folder(tmp_path_factory.mktemp("results"))
    return write_report(folder).read_text(encoding="utf-8")


def test_table1_accuracy_and_strict_majority_with_intervals(report):
    rows = [cells(x) for x in section(report, "Accuracy (Table 1 layout)")]
    # CoT: B,B,A,UNPARSED -> 2/4. One agent, so strict majority = the same 2/4.
    #   Wilson(2, 4): z²/n = .96037, centre = (.5 + .48018) / 1.96037 = .5,
    #   half = 1.95996 / 1.96037 * sqrt(.0625 + .060023) = .99981 * .35003 = .34997 -> [.150, .850]
    assert rows[0] == ["CoT", "0.500", "[0.150, 0.850]", "0.500", "[0.150, 0.850]", "4"]
    # MAD finals A,B,B,A -> 2/4; strict majority: q1 1/3, q2 3/3, q3 1/3, q4 0/3 -> 1/4.
    #   Wilson(1, 4): centre = (.25 + .48018) / 1.96037 = .37247,
    #   half = .99981 * sqrt(.046875 + .060023) = .99981 * .32695 = .32689 -> [.046, .699]
    assert rows[1] == ["MAD", "0.500", "[0.150, 0.850]", "0.250", "[0.046, 0.699]", "4"]
    assert rows[2][:2] == ["TrueMAD", "0.500"]
    # R²-MAD finals B,B,B,A -> 3/4 (Wilson centre .62753 ± .32689 -> [.301, .954]); strict: q1 3/3,
    #   q2 3/3, q3 3/3, q4 0/3 -> 3/4.
    assert rows[3] == ["R²-MAD", "0.750", "[0.301, 0.954]", "0.750", "[0.301, 0.954]", "4"]
    assert len(rows) == 4  # the ablation is not a Table 1 row


def test_table2_lists_the_ablation_under_r2mad_and_no_table3(report):
    rows = [cells(x) for x in section(report, "Ablations (Table 2 layout)")]
    # w/o Confidence finals A,B,B,A -> 2/4; strict: q1 0/3, q2 3/3, q3 2/3, q4 0/3 -> 2/4
    assert [r[0] for r in rows] == ["R²-MAD", "- w/o Confidence"]
    assert rows[1][1] == "0.500" and rows[1][3] == "0.500"
    assert "Table 3" not in report


def test_agent_accuracy_per_round(report):
    rows = {cells(x)[0]: cells(x)[1:] for x in section(report, "Agent accuracy per round")}
    # MAD correct agents per round: q1 1,1,1  q2 2,3,(3 carried)  q3 1,1,1  q4 0,(0),(0)
    #   -> 4/12 = .333, 5/12 = .417, 5/12 = .417
    assert rows["MAD"] == ["0.333", "0.417", "0.417"]
    # R²-MAD: q1 1,2,3  q2 2,3,3  q3 1,2,3  q4 0,0,0 -> 4/12, 7/12 = .583, 9/12 = .750
    assert rows["R²-MAD"] == ["0.333", "0.583", "0.750"]
    assert "CoT" not in rows  # single-agent baselines have no rounds to compare


def test_shared_misconception_subset_is_defined_by_mads_round0(report):
    # MAD's round 0 has a wrong majority on q1 [B,A,A], q3 [B,A,C], q4 [A,A,A]; not on q2 [B,B,A].
    assert "3 of 4" in report.split("## Shared-misconception subset", 1)[1].split("\n\n")[1]
    rows = {cells(x)[0]: cells(x) for x in section(report, "Shared-misconception subset")}
    # On q1, q3, q4: CoT B,A,UNPARSED -> 1/3; MAD A,B,A -> 1/3; R²-MAD B,B,A -> 2/3; w/o Conf A,B,A -> 1/3
    assert rows["CoT"][1] == "0.333" and rows["CoT"][3] == "3"
    assert rows["MAD"][1] == "0.333"
    assert rows["R²-MAD"][1] == "0.667"
    assert rows["R²-MAD w/o Confidence"][1] == "0.333"


def test_transition_rates_in_table4_layout(report):
    rows = {cells(x)[0]: cells(x)[1:] for x in section(report, "Stance transitions")}
    # MAD  q1: C→W 1, W→W 1, W→C 1 | W→W 2, C→C 1;  q2: C→C 2, W→C 1;  q3: C→C 2, W→W 4;  q4: none.
    #   subset (q1,q3,q4): C→W 1 / (1 + 3 C→C) = 1/4;  W→C 1 / (1 + 7 W→W) = 1/8
    #   all: C→W 1/6;  W→C 2/9
    assert rows["MAD"] == ["0.250 (1/4)", "0.125 (1/8)", "0.167 (1/6)", "0.222 (2/9)"]
    # R²-MAD  q1: C→C 3, W→W 1, W→C 2;  q2: C→C 2, W→C 1;  q3: C→C 3, W→C 2, W→W 1.
    #   subset: C→W 0/6, W→C 4/6;  all: C→W 0/8, W→C 5/7
    assert rows["R²-MAD"] == ["0.000 (0/6)", "0.667 (4/6)", "0.000 (0/8)", "0.714 (5/7)"]
    # w/o Confidence  q1: C→W 1, W→W 2;  q2: C→C 2, W→C 1;  q3: C→C 3, W→C 1, W→W 2.
    #   subset: C→W 1/4, W→C 1/5;  all: C→W 1/6, W→C 2/6
    assert rows["R²-MAD w/o Confidence"] == ["0.250 (1/4)", "0.200 (1/5)", "0.167 (1/6)", "0.333 (2/6)"]
    assert "CoT" not in rows


def test_parse_failures(report):
    rows = {cells(x)[0]: cells(x)[1:] for x in section(report, "Parse failures")}
    assert rows["CoT"] == ["1", "4", "0.250"]  # q4 UNPARSED, 1 of 4 turns
    assert rows["MAD"] == ["0", "27", "0.000"]  # 9 + 6 + 9 + 3 turns


def test_cost_in_table10_layout(report):
    rows = {cells(x)[0]: cells(x)[1:] for x in section(report, "Cost per query")}
    # 300 + 100 tokens per agent turn, at $0.20 / $0.60 per million: 300 * 0.2e-6 + 100 * 0.6e-6 = $0.00012.
    # Call seconds are a tenth of the wall seconds in these rows.
    # CoT: 400 per query, $0.00012; mean seconds (1+2+3+4)/4 = 2.5, calls 0.25
    assert rows["CoT"] == ["400", "–", "–", "$0.000120", "0.25", "2.50"]
    # MAD: 27 turns x 400 / 4 = 2700; 27/4 x $0.00012 = $0.00081; seconds (10+20+30+40)/4 = 25
    assert rows["MAD"] == ["2.70K", "–", "–", "$0.000810", "2.50", "25.00"]
    # TrueMAD: advice 6 x 50 tokens per debate round: q1 600, q2 300, q3 600 -> 1500/4 = 375;
    #   advice costs 40 * 0.2e-6 + 10 * 0.6e-6 = $0.000014 per call, 30 calls / 4 = $0.000105 more: $0.000915
    assert rows["TrueMAD"] == ["2.70K", "–", "375", "$0.000915", "3.50", "35.00"]
    # R²-MAD: summaries of 200 tokens: q1 400, q2 200, q3 400 -> 1000/4 = 250;
    #   a summary costs 150 * 0.2e-6 + 50 * 0.6e-6 = $0.00006, 5 / 4 of them: $0.00081 + $0.000075 = $0.000885
    assert rows["R²-MAD"] == ["2.70K", "250", "–", "$0.000885", "2.70", "27.00"]
    # w/o Confidence: turns 6 + 6 + 9 + 3 = 24 -> 9600/4 = 2400; summaries 200+200+400 -> 200
    assert rows["R²-MAD w/o Confidence"][:3] == ["2.40K", "200", "–"]
    assert "$0.2 per million input and $0.6 per million output" in report


def test_notes_show_memory_off_but_not_early_stops(report):
    notes = report.split("## Notes", 1)[1]
    assert f"- R²-MAD (4×): {MEMORY_OFF}" in notes
    assert "stopping early" not in notes


def test_consensus_curve_carries_an_early_stop_forward(tmp_path):
    res = load_results(make_folder(tmp_path))
    # MAD Cons per round: q1 2/3,2/3,2/3  q2 2/3,1,(1)  q3 1/3 x3  q4 1,(1),(1)
    #   round 0 (2/3+2/3+1/3+1)/4 = 2/3;  rounds 1, 2: (2/3+1+1/3+1)/4 = 3/4
    assert consensus_curve(res.by_method["mad"]) == pytest.approx([2 / 3, 3 / 4, 3 / 4])


def test_plots_are_written_as_png(tmp_path):
    folder = make_folder(tmp_path)
    write_report(folder)
    for name in ("accuracy_vs_tokens.png", "consensus.png"):
        data = (folder / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name


def test_oracle_gap_per_method(report):
    rows = {cells(x)[0]: cells(x)[1:] for x in section(report, "Oracle gap")}
    # last rounds (gold B): MAD q1 [A,A,B] vote A (gap), q2 [B,B,B], q3 [B,A,C] vote B, q4 [A,A,A] -> 1/4;
    #   some agent right at the end on q1, q2, q3 -> 3/4.  Wilson(1, 4) = [.046, .699] (see Table 1)
    assert rows["MAD"] == ["0.500", "0.750", "0.250 (1/4)", "[0.046, 0.699]"]
    assert rows["TrueMAD"] == rows["MAD"]
    # R²-MAD ends q1-q3 unanimous on B, q4 on A: the vote never discards a held right answer
    assert rows["R²-MAD"][2] == "0.000 (0/4)" and rows["R²-MAD"][1] == "0.750"
    # w/o Confidence: q3 ends [B,B,A] vote B (right); q1 [A,A,A] -> no gap anywhere
    #   (some agent right at the end: q2, q3 -> 2/4)
    assert rows["R²-MAD w/o Confidence"] == ["0.500", "0.500", "0.000 (0/4)", "[0.000, 0.490]"]
    assert rows["CoT"][2] == "0.000 (0/4)"  # one agent: its answer is the vote


def test_report_does_not_depend_on_row_order(tmp_path):
    ordered = write_report(make_folder(tmp_path / "a")).read_text(encoding="utf-8")
    shuffled = write_report(make_folder(tmp_path / "b", order=7)).read_text(encoding="utf-8")
    assert shuffled == ordered
    assert [r["method"] for r in load_results(tmp_path / "b").rows[:5]] == METHODS


def test_incomplete_run_is_flagged(tmp_path):
    folder = make_folder(tmp_path)
    lines = (folder / ROWS).read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / ROWS).write_text("".join(lines[:-2]) + lines[-2][:40], encoding="utf-8")  # + a partial line
    report = write_report(folder).read_text(encoding="utf-8")
    assert "**Incomplete:** 18 of 20 rows" in report


def test_table1_over_several_benchmarks_has_an_average(tmp_path):
    first, second = make_folder(tmp_path / "a"), make_folder(tmp_path / "b")
    run = json.loads((second / RUN).read_text())
    (second / RUN).write_text(json.dumps({**run, "dataset": "truthfulqa"}))
    rows = jsonl_values(second / ROWS)
    kept = [r for r in rows if r["method"] != "cot" and r["question_id"] != "q4"]  # q1-q3, no CoT
    (second / ROWS).write_text("".join(json.dumps(r) + "\n" for r in kept))
    from r2mad.cli import main
    assert main(["eval", "--report-only", "--out", str(tmp_path / "t"), "--combine", str(first), str(second)]) == 0
    text = (tmp_path / "t" / "table1.md").read_text(encoding="utf-8")
    accuracy, gap = text.split("Oracle gap on scripted:")
    lines = {cells(x)[0]: cells(x)[1:] for x in accuracy.splitlines()[5:] if x.startswith("| ")}
    gaps = {cells(x)[0]: cells(x)[1:] for x in gap.splitlines()[2:] if x.startswith("| ")}
    # MAD ends q1 on [A, A, B] and votes A: agent 3 held B -> 1/4 on demo-mcq, 1/3 on q1-q3; CoT has no
    #   TruthfulQA rows, so no rate there
    assert gaps["MAD"] == ["0.250", "0.333"] and gaps["R²-MAD"] == ["0.000", "0.000"]
    assert gaps["CoT"] == ["0.000", "–"]
    assert "| Method | demo-mcq | TruthfulQA | Avg. |" in text
    # On q1-q3: R²-MAD B,B,B -> 1.0, Avg. (.75 + 1) / 2 = .875;  MAD A,B,B -> 2/3, Avg. (.5 + .6667) / 2
    #   = .583;  CoT lacks TruthfulQA -> no average
    assert lines["R²-MAD"] == ["0.750", "1.000", "0.875"]
    assert lines["MAD"] == ["0.500", "0.667", "0.583"]
    assert lines["CoT"] == ["0.500", "–", "–"]
    assert list(lines) == ["CoT", "MAD", "TrueMAD", "R²-MAD"]
