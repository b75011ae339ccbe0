"""Markdown report and PNG plots for an eval results folder (run.json + rows.jsonl), laid out like the
R²-MAD paper's tables. Not for running methods or defining metrics (see evaluate.py, metrics.py)."""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Sequence

from r2mad.evaluation import metrics as m
from r2mad.evaluation import oracle, paper_tables, prereg, readings, trust
from r2mad.evaluation.models import mix_line
from r2mad.evaluation.report_html import write_report_html
from r2mad.evaluation.results import (  # noqa: F401 - load_results and Results are this module's API too
    TABLE3,
    Results,
    fmt,
    fmt_ci,
    label,
    load_results,
    save_plot,
    table,
)
from r2mad.methods import FULL, PLAIN, REGISTRY, SAMPLING, is_debate
from r2mad.methods.departures import departures
from r2mad.types import Transcript

TABLE1_ORDER = tuple(name for name, spec in REGISTRY.items() if "main" in spec.tables)
TABLE2 = {name: "R²-MAD" if name == FULL else f"- {spec.label}"
          for name, spec in REGISTRY.items() if "components" in spec.tables}
ABLATION_NAMES = (set(TABLE2) | set(TABLE3)) - {FULL}
EARLY_STOP = "All agents agree"
MARKERS = "osD^vPX*<>"
_f, _ci = fmt, fmt_ci


def _rate(k: int, n: int) -> str:
    return "–" if n == 0 else f"{k / n:.3f} ({k}/{n})"


# --- sections -------------------------------------------------------------------------------------

def _ordered(res: Results, names: Sequence[str]) -> list[str]:
    return [n for n in names if res.by_method.get(n)]


def _table1_methods(res: Results) -> list[str]:
    others = [n for n in res.by_method if n not in TABLE1_ORDER and n not in ABLATION_NAMES]
    return _ordered(res, [*TABLE1_ORDER, *others])


def accuracy_rows(res: Results, names: Sequence[str], labels: dict[str, str] | None = None) -> list[list[str]]:
    out = []
    for name in names:
        ts = res.by_method[name]
        acc, strict = m.accuracy(ts), m.strict_majority_accuracy(ts)
        out.append([(labels or {}).get(name, label(name)), _f(acc.value), _ci(acc),
                    _f(strict.value), _ci(strict), str(acc.n)])
    return out


def _accuracy_header(res: Results, first: str = "Method") -> list[str]:
    return [first, f"{res.benchmark} (plurality)", "95% CI", "Strict majority", "95% CI", "n"]


def _debate_methods(res: Results) -> list[str]:
    return [n for n in res.by_method if res.by_method[n] and is_debate(n)]


def _transition_totals(ts: Sequence[Transcript]) -> m.Transitions:
    total = m.Transitions()
    for t in m.scored(ts):
        total += m.transitions(t)
    return total


def shared_subset(res: Results, name: str) -> list[Transcript]:
    """The paper's subset: questions where most of MAD's round-0 agents are wrong (each method's own
    round 0 when MAD was not run)."""
    reference = res.by_method.get(PLAIN) or None
    return m.shared_misconception_subset(res.by_method[name], reference)


def render_report(res: Results) -> str:
    run, settings = res.run, res.run["settings"]
    n_questions, methods = len(run["question_ids"]), run["methods"]
    expected = n_questions * len(methods) * len(res.seeds)
    seeds = (f"sampling seeds {', '.join(map(str, res.seeds))}" if len(res.seeds) > 1
             else f"sampling seed {run['seed']}")
    out = [f"# {res.benchmark} ({run['split']}) on {run['backbone']}", "",
           f"Dataset `{run['dataset']}`, split `{run['split']}` (split seed {run['split_seed']}, "
           f"{n_questions} questions); methods: {', '.join(methods)}; {seeds}; "
           f"code version {run['code_version']}.",
           f"Profile `{settings.get('profile', 'demo')}`: "
           f"{settings['agents']} agents, {settings['rounds']} rounds counting round 0, temperature "
           f"{settings['temperature']}, max tokens {settings['max_tokens']}, early stop "
           f"{'on' if settings['early_stop'] else 'off'}; round 0 "
           f"{'shared by the debate methods' if run['share_round0'] else 'computed by each method'}."]
    if run.get("bank"):
        out += ["", bank_line(run["bank"])]
    if mix_line(run):
        out += ["", mix_line(run)]
    if len(res.all_rows) < expected:
        out += ["", f"**Incomplete:** {len(res.all_rows)} of {expected} rows; rerun the same `eval` "
                "command to finish."]
    main = _table1_methods(res)
    out += ["", "## Accuracy (Table 1 layout)", "",
            table(_accuracy_header(res), accuracy_rows(res, main)), "",
            "Plurality: the voted final answer is correct. Strict majority (the R²-MAD code's metric): "
            "more than half of the last round's agents hold the gold answer. Wilson 95% intervals."]
    out += readings.section(res)
    if any(res.by_method.get(n) for n in set(TABLE2) - {FULL}):
        out += ["", "## Ablations (Table 2 layout)", "",
                table(_accuracy_header(res), accuracy_rows(res, _ordered(res, TABLE2), TABLE2))]
    if any(res.by_method.get(n) for n in set(TABLE3) - {FULL}):
        out += ["", "## Retrieval policies (Table 3 layout)", "",
                table(_accuracy_header(res, "Policy"), accuracy_rows(res, _ordered(res, TABLE3), TABLE3))]
    out += paper_tables.sections([res])  # the layout of the paper whose profile the run used
    out += oracle.section(res)
    out += trust.sections(res)
    out += prereg.section(res.prereg, run)
    out += _process_sections(res)
    out += ["", "## Plots", "", "![accuracy vs tokens](accuracy_vs_tokens.png)", "",
            "![consensus per round](consensus.png)"]
    if res.by_method.get(SAMPLING):
        out += ["", "![compute-matched](compute_matched.png)"]
    out += ["", "## Departures from the papers", "",
            *(f"- {line}" for line in departures(settings, methods) or ["None."])]
    notes = _notes(res)
    if notes:
        out += ["", "## Notes", "", *notes]
    return "\n".join(out) + "\n"


def bank_line(bank: dict) -> str:
    """Where the memory cases came from: the bank, its questions, the model that debated them and the
    embedder that indexes them (the paper's is BAAI/bge-m3)."""
    def known(key: str) -> str:
        return str(bank.get(key)) if bank.get(key) is not None else "not recorded"
    held = bank.get("questions")
    return (f"Memory bank `{bank['path']}`: {held} question{'' if held == 1 else 's'} of {known('dataset')} "
            f"(split seed {known('split_seed')}), debated by {known('backbone')}, embedded by {known('embedder')}.")


def _process_sections(res: Results) -> list[str]:
    debaters = _debate_methods(res)
    out: list[str] = []
    if any(m.scored(res.by_method[n]) for n in debaters):
        curves = {n: m.agent_accuracy_by_round(res.by_method[n]) for n in debaters}
        curves = {n: c for n, c in curves.items() if c}  # a method with no scored debate has no curve
        depth = max((len(c) for c in curves.values()), default=0)
        out += ["", "## Agent accuracy per round", "",
                table(["Method", *(f"Round {i}" for i in range(depth))],
                      [[label(n), *(_f(c[i]) if i < len(c) else "–" for i in range(depth))]
                       for n, c in curves.items()]), "",
                "Mean correctness of every agent's answer; a debate that stopped early keeps its last answers."]
    if PLAIN in debaters:
        ref = m.scored(res.by_method[PLAIN])
        defined = (f"questions where more than half of MAD's round-0 agents are wrong: "
                   f"{sum(bool(m.shared_misconception(t)) for t in ref)} of {len(ref)}")
    else:
        defined = "questions where more than half of each method's own round-0 agents are wrong"
    rows = []
    for name in _table1_methods(res) + [n for n in res.by_method if n in ABLATION_NAMES and res.by_method[n]]:
        est = m.accuracy(shared_subset(res, name))
        rows.append([label(name), _f(est.value), _ci(est), str(est.n)])
    out += ["", "## Shared-misconception subset", "", f"Subset: {defined}.", "",
            table(["Method", "Accuracy", "95% CI", "n"], rows)]
    if debaters:
        trows = []
        for name in debaters:
            sub, every = _transition_totals(shared_subset(res, name)), _transition_totals(res.by_method[name])
            trows.append([label(name), _rate(sub.c2w, sub.c2w + sub.c2c), _rate(sub.w2c, sub.w2c + sub.w2w),
                          _rate(every.c2w, every.c2w + every.c2c), _rate(every.w2c, every.w2c + every.w2w)])
        out += ["", "## Stance transitions (Table 4 layout)", "",
                table(["Method", "C→W ↓ (subset)", "W→C ↑ (subset)", "C→W ↓ (all)", "W→C ↑ (all)"], trows), "",
                "Agent-round pairs t-1 → t: C→W = correct agents that turn wrong / pairs correct at t-1; "
                "W→C = wrong agents that turn correct / pairs wrong at t-1. Failed calls are skipped."]
    prows = []
    for name, ts in res.by_method.items():
        if ts:
            fails = sum(m.parse_failures(t) for t in ts)
            answered = sum(1 for t in ts for r in t.rounds for turn in r.turns if turn.error is None)
            prows.append([label(name), str(fails), str(answered), _f(m.parse_failure_rate(ts))])
    out += ["", "## Parse failures", "", table(["Method", "UNPARSED turns", "Answered turns", "Rate"], prows)]
    return out + trust.cost_section(res)


def _notes(res: Results) -> list[str]:
    """Failed debates and the most frequent notices per method, over every sampling seed."""
    out = []
    for name in res.by_method:
        ts = [t for seed in res.seeds for t in res.by_seed[seed].get(name, [])]
        failed = sum(t.status == "failed" for t in ts)
        if failed:
            out.append(f"- {label(name)}: {failed} of {len(ts)} debates failed (scored as wrong); "
                       "rerun with --retry-failed to try them again.")
        counts = Counter(n for t in ts for n in t.notices if not n.startswith(EARLY_STOP))
        for text, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]:
            out.append(f"- {label(name)} ({k}×): {text[:200]}")
    return out


# --- plots ----------------------------------------------------------------------------------------

def consensus_curve(ts: Sequence[Transcript]) -> list[float]:
    """Mean Cons(Z) per round; an early-stopped debate keeps its last value."""
    paths = [m.consensus_trajectory(t) for t in ts if t.rounds]
    if not paths:
        return []
    depth = max(len(p) for p in paths)
    return [sum(p[min(i, len(p) - 1)] for p in paths) / len(paths) for i in range(depth)]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_accuracy_vs_tokens(res: Results, path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for i, (name, ts) in enumerate(res.by_method.items()):
        acc = m.accuracy(ts)
        if acc.n == 0:
            continue
        c = m.cost(ts)
        x = c["debate_tokens"] + c["summary_tokens"] + c["auxiliary_tokens"]
        ax.errorbar([x], [acc.value], yerr=[[acc.value - acc.low], [acc.high - acc.value]],
                    fmt=MARKERS[i % len(MARKERS)], capsize=3, label=label(name))
    if ax.lines:
        ax.legend(fontsize=8)
    ax.set(xlabel="tokens per query", ylabel="accuracy (plurality, 95% CI)", ylim=(-0.02, 1.02),
           title=f"{res.benchmark} on {res.run['backbone']}")
    return save_plot(plt, fig, ax, path)


def plot_consensus(res: Results, path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for name in _debate_methods(res):
        curve = consensus_curve(res.by_method[name])
        ax.plot(range(len(curve)), curve, marker="o", label=label(name))
    if ax.lines:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no debate methods in this run", ha="center", transform=ax.transAxes)
    ax.set(xlabel="round", ylabel="mean consensus Cons(Z)", ylim=(0, 1.05),
           title=f"Consensus per round — {res.benchmark}")
    ax.xaxis.get_major_locator().set_params(integer=True)
    return save_plot(plt, fig, ax, path)


def write_table1(results_dirs: Sequence[str | Path], out_path: str | Path) -> Path:
    """The paper's Table 1 over several results folders: plurality accuracy, one column per benchmark
    and their mean (Avg.), one block per backbone."""
    runs = [load_results(d) for d in results_dirs]
    rank = {n: i for i, n in enumerate(TABLE1_ORDER)}
    lines = ["# Overall accuracy (Table 1 layout)"]
    for backbone in dict.fromkeys(r.run["backbone"] for r in runs):
        group = [r for r in runs if r.run["backbone"] == backbone]
        names = sorted({n for r in group for n in _table1_methods(r)}, key=lambda n: (rank.get(n, 99), n))
        rows = []
        for name in names:
            accs = [m.accuracy(r.by_method.get(name, [])) for r in group]
            mean = sum(a.value for a in accs) / len(accs) if all(a.n for a in accs) else math.nan
            rows.append([label(name), *(_f(a.value) for a in accs), _f(mean)])
        gaps = [[label(name), *(_f(oracle.oracle_gap_rate(r.by_method.get(name, [])).value) for r in group)]
                for name in names]
        lines += ["", f"## {backbone}", "", table(["Method", *(r.benchmark for r in group), "Avg."], rows), "",
                  f"Oracle gap on {backbone}:", "", table(["Method", *(r.benchmark for r in group)], gaps)]
    lines += ["", "Plurality accuracy; Avg. is the mean over the benchmarks (– when a method lacks one). Oracle "
              "gap: the share of questions where some agent ended right and the vote did not."]
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_report(results_dir: str | Path, run_ids: dict | None = None) -> Path:
    """Write report.md (and report.html), ledger.md, accuracy_vs_tokens.png, consensus.png and (with
    Self-Consistency in the run) compute_matched.png into the folder; returns report.md. `run_ids`: the
    ledger's debates in the run store."""
    folder = Path(results_dir)
    res = load_results(folder)
    plot_accuracy_vs_tokens(res, folder / "accuracy_vs_tokens.png")
    plot_consensus(res, folder / "consensus.png")
    trust.plot_compute_matched(res, folder / "compute_matched.png", _pyplot())
    trust.write_ledger(res, folder / "ledger.md", run_ids)
    path = folder / "report.md"
    path.write_text(render_report(res), encoding="utf-8")
    write_report_html(folder)  # the same, one self-contained file to send
    return path
