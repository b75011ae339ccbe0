"""Every mode of `python -m r2mad bench` runs in its quickest form (`--quick`) and prints every figure it
promises as numbers, so a figure the docs quote (docs/eval.md, docs/space.md) can always be reproduced; the
side-by-side rows obey the round-0 arithmetic (checked by hand). Behaviour only: no test here bounds a
wall-clock time."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from r2mad.bench.appproc import config_copy, tree_hwm_mb, tree_rss_mb
from r2mad.cli import main
from r2mad.settings.config import ROOT, load_config

slow = pytest.mark.slow  # real model, server, embedder or app


def run_bench(capsys, *flags: str) -> dict[str, str]:
    """`bench FLAGS --quick`: {figure: value} of every row it printed (the figure's leading spaces dropped)."""
    code = main(["bench", *flags, "--quick"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert not re.search(r"\bnan\b", out), out
    return {cells[0].strip(): cells[1] for line in out.splitlines()
            if len(cells := re.split(r"\s{2,}", line.strip())) >= 2}


def value(rows: dict[str, str], prefix: str) -> str:
    found = [v for k, v in rows.items() if k.startswith(prefix)]
    assert found, f"no figure starting {prefix!r} in {list(rows)}"
    return found[0]


def numbers(text: str, count: int) -> list[float]:
    """The `count` numbers a printed value holds ("3.68 / 2.30", "99.7 (15 calls, 206 tokens)", "53% / 0%")."""
    found = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text)]
    assert len(found) == count, (text, found)
    return found


@slow
def test_bench_prints_every_figure_and_the_round0_arithmetic(capsys):
    rows = run_bench(capsys)  # 0.01 s a call, 0.0005 s a word, one repeat, a 200-case bank
    # wall-clock ratios are the bench's figures to report (about 1x concurrent, 3x sequential, R²-MAD slower
    # than MAD by its summary call); a busy machine stretches them, so the test only reads them
    for timed in ("round wall / slowest call (concurrent", "round wall / slowest call (sequential",
                  "R²-MAD wall / MAD wall, faithful summary (a call", "R²-MAD wall / MAD wall, latency per generated"):
        assert float(value(rows, timed)) > 0
    first, later = (float(x) for x in value(rows, "pattern-only summary (a departure): first").split(" / "))
    assert first > 0 and later > 0  # one repeat still measures a later debate, on the cache the first one filled
    # speculative summaries: 5 splits after round 0 + 3^3 keep-or-adopt outcomes after round 1
    assert "pattern-only, first debate with prefetch_summaries (32 summary calls instead of 2)" in rows
    side_by_side = float(value(rows, "side-by-side tokens / separate runs"))
    share = float(re.search(r"round 0 = ([\d.]+)%", " ".join(rows)).group(1)) / 100
    # only round 0 is shared: 4 methods save 3/4 of their round 0, no more and no less
    assert abs(side_by_side - float(value(rows, "best possible from sharing round 0"))) <= 0.002
    assert abs(side_by_side - (1 - 0.75 * share)) <= 0.002
    assert 0.75 < float(value(rows, "side-by-side calls / separate runs")) < 0.9  # 9 of ~55 calls saved
    # a question all agents answer alike stops after the shared round 0: one round 0 instead of four
    assert float(value(rows, "same, early stop on")) == 0.25
    assert value(rows, "share of such questions").endswith("%")
    assert value(rows, "retrieve + confidence, k=1, edge") == "200"
    wall, deadline = numbers(value(rows, "MAD debate (1 round) with an agent answering").split(";")[0], 2)
    assert 0 < wall < deadline
    assert value(rows, "MAD debate (1 round)").endswith("done, final 5, refused unchecked: yes")
    assert float(value(rows, "longest a 0.05 s ticker")) >= 0 and float(value(rows, "100 KB of unclosed")) > 0


def test_the_memory_figures_count_every_process_of_the_tree(tmp_path):
    """The app's figure holds its model process: a child holding 200 MB shows in its parent's tree."""
    before = tree_rss_mb(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; x = bytearray(200 << 20); print(1, flush=True); "
                              "time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        child.stdout.readline()
        assert tree_rss_mb(os.getpid()) - before > 150
        assert tree_hwm_mb(os.getpid()) >= tree_rss_mb(os.getpid()) - 5  # each peak is at least its present
    finally:
        child.kill()
        child.wait()
    time.sleep(0.1)
    assert tree_rss_mb(os.getpid()) - before < 100


def test_the_app_of_a_bench_reads_the_debate_defaults_it_was_given(tmp_path):
    settings = load_config(config_copy(tmp_path, early_stop=False, agents=2, max_tokens=16)).settings
    assert (settings.early_stop, settings.agents, settings.max_tokens) == (False, 2, 16)
    assert settings.rounds == load_config().settings.rounds  # the rest as shipped


@slow
def test_bench_memory_prints_the_app_and_index_figures(capsys):
    rows = run_bench(capsys, "--memory")
    start = numbers(value(rows, "app RSS after start"), 1)[0]
    after = numbers(value(rows, "app + model process after a first MAD"), 1)[0]
    assert after > start  # the model process is counted
    assert numbers(value(rows, "peak during that"), 1)[0] > start
    numbers(value(rows, "peak during a first R²-MAD debate"), 1)
    numbers(value(rows, "that debate's wall time"), 1)
    numbers(value(rows, "cold index build of memory/demo-mcq"), 2)


@slow
def test_bench_parse_prints_both_unparsed_shares(capsys):
    rows = run_bench(capsys, "--parse")
    for dataset in ("demo-mcq", "demo-math"):
        raw, guarded = numbers(value(rows, f"{dataset} test, UNPARSED"), 2)
        assert 0 <= guarded <= raw <= 100


@slow
def test_bench_load_prints_every_figure(capsys):
    rows = run_bench(capsys, "--load", "--no-early-stop")
    quiet, busy = numbers(value(rows, "one embedded-model call"), 2)  # quiet / busy
    assert quiet > 0 and busy > 0
    assert numbers(value(rows, "beside a busy core / quiet"), 1)[0] > 0
    assert all(rate > 0 for rate in numbers(value(rows, "embedded model, generated tokens/s"), 2))
    assert numbers(value(rows, "3 in flight / 1"), 1)[0] > 0
    worst, median = numbers(value(rows, "the app answers a poll while the default bank warms up"), 2)
    assert worst >= median > 0
    wall, calls, tokens = numbers(value(rows, "MAD alone, 2 agents x 2 rounds, early stop off"), 3)
    assert calls == 4 and tokens > 0  # the quick form: 2 agents x 2 rounds, no answer guard
    p50, p95, last = numbers(value(rows, "2 MAD multiple-choice debates at once"), 3)
    assert 0 < p50 <= p95 <= last
    finished, visitors, rate, generated, *rounds = numbers(value(rows, "finished / tokens per second"), 6)
    assert finished == visitors == 2 and rate > generated > 0  # prompts counted beside what was generated
    assert rounds == [2, 2]  # --no-early-stop reached the app's debates
    wall, raw, ratio = numbers(value(rows, "raw llama.cpp on the agents' same prompts"), 3)
    assert wall > 0 and ratio == pytest.approx(rate / raw, abs=0.011)
    sampled, hwm = numbers(value(rows, "app + model process peak RSS"), 2)
    assert sampled > 0 and hwm > 0


def test_bench_serve_prints_the_overhead_and_the_throughput(capsys):
    rows = run_bench(capsys, "--serve")
    direct = numbers(value(rows, "one MAD debate started directly (9 calls"), 1)[0]
    over_http = numbers(value(rows, "the same debate asked over HTTP"), 1)[0]
    delta, percent = numbers(value(rows, "server overhead"), 2)
    assert direct > 0 and over_http > 0 and delta == pytest.approx(over_http - direct, abs=0.0015)
    assert percent == pytest.approx(100 * delta / direct, abs=1.5)  # from the unrounded times
    total = numbers(value(rows, "2 requests at once: all answered after"), 1)[0]
    per_min, ratio = numbers(value(rows, "2 requests at once: throughput"), 2)
    assert total > 0 and per_min == pytest.approx(2 / total * 60, rel=0.05)
    as_n, times_one = numbers(value(rows, "one request with n=2"), 2)
    assert as_n > 0 and times_one == pytest.approx(as_n / over_http, rel=0.05, abs=0.01)


@slow
def test_bench_kinds_prints_what_comparing_answers_costs_and_one_embedder_load():
    # in a process of its own, as `python -m r2mad bench` runs: an earlier test of this process may have loaded
    # the embedder already, and the figure counts the loads of one process
    done = subprocess.run([sys.executable, "-m", "r2mad", "bench", "--kinds", "--quick"], capture_output=True,
                          text=True, timeout=1800, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {cells[0].strip(): cells[1] for line in done.stdout.splitlines()
            if len(cells := re.split(r"\s{2,}", line.strip())) >= 2}
    for kind in ("short", "open"):
        [label] = [k for k in rows if k.startswith(f"{kind} (")]  # "short (3 answers read): …"
        read = numbers(label.split(":")[0], 1)[0]
        spent, wall, share = numbers(rows[label], 3)  # "12.042 / 40.3 (0.03%)"
        assert (spent > 0 if read else spent == 0) and 0 < wall and share >= 0
    assert numbers(value(rows, "short ("), 3)[0] > 0  # short answers were read and compared
    assert value(rows, "embedder loads in this process") == "1"


def test_bench_grading_prints_the_graders_figures_and_what_a_judge_adds(capsys):
    rows = run_bench(capsys, "--grading")
    agree, items, _ = numbers(value(rows, "math: agree with the hand verdict"), 3)  # "175/177 = 98.9%"
    assert items >= 150 and agree / items >= 0.98
    assert value(rows, "short: undecided · scored correct but not").endswith("· 0")
    assert value(rows, "pairs: undecided · different answers grouped").endswith("· 0")
    assert value(rows, "without a judge: rounds · agent calls · judge calls") == "3 · 9 · 0"  # never stops early
    assert value(rows, "with a judge: rounds · agent calls · judge calls") == "1 · 3 · 3"  # it did, once graded
    assert value(rows, "with a judge: debate wall (s) · final verdict").endswith("· correct")


def test_the_raw_llama_reference_sends_each_round_of_every_debate_as_one_wave():
    from r2mad.bench.rawllama import waves
    from r2mad.types import AgentTurn, Answer, Message, Round, Task, Transcript

    def turn(agent, rnd, tokens_out, error=None):
        return AgentTurn(agent, rnd, "p", (Message("user", f"a{agent} r{rnd}"),), "t", Answer("B"),
                         tokens_out=tokens_out, error=error)

    def debate(*rounds):
        return Transcript(Task("mcq", "Q?"), "mad", "embedded", {"temperature": 0.7},
                          tuple(Round(i, turns, 1.0) for i, turns in enumerate(rounds)), Answer("B"))

    first = debate((turn(0, 0, 12), turn(1, 0, 0, error="timed out")), (turn(0, 1, 30), turn(1, 1, 5)))
    second = debate((turn(0, 0, 7),))
    w = waves([first, second])
    assert [len(x) for x in w] == [2, 2]  # round 0: the first's answered turn and the second's; round 1: two
    assert [r["max_tokens"] for r in w[0]] == [12, 7] and [r["max_tokens"] for r in w[1]] == [30, 5]
    assert w[1][0]["messages"] == [{"role": "user", "content": "a0 r1"}] and w[0][0]["temperature"] == 0.7
