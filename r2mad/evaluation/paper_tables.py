"""Each seed paper's table layout with our numbers in it, for a run under that paper's profile (`--profile
truemad | du | madm2`): TrueMAD's Agent/Vote ACC (mean ± SD over seeds), its round-wise and R1-stratified
tables; Du et al.'s accuracy ± standard error and biography factuality; MAD-M²'s accuracy. Pure over
loaded results; no model calls (the factuality verdicts come from `python -m r2mad factuality`)."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Sequence

from r2mad.evaluation import metrics as m
from r2mad.evaluation.benchmarks.du import authors_correct
from r2mad.evaluation.results import Results, load_results, table
from r2mad.methods import is_debate
from r2mad.methods.protocols import Protocol, protocol_of
from r2mad.types import Transcript

FACTUALITY = "factuality.jsonl"


# --- measures (fractions) -------------------------------------------------------------------------

def agent_accuracy(ts: Sequence[Transcript], round_index: int | None = None) -> float:
    """Mean correctness of every agent at a round (default the last; an early-stopped debate carries its last
    round forward), pooled over agents and questions."""
    pooled = [ok for t in m.scored(ts) for ok in m.agent_correct(t, _at(t, round_index))]
    return sum(pooled) / len(pooled) if pooled else math.nan


def _at(t: Transcript, round_index: int | None) -> int:
    last = len(t.rounds) - 1
    return last if round_index is None else min(round_index, last)


def vote_accuracy(ts: Sequence[Transcript]) -> float:
    """Strict majority: strictly more than half of the last round's agents correct (TrueMAD's Vote ACC)."""
    return m.strict_majority_accuracy(ts).value if m.scored(ts) else math.nan


def plurality_accuracy(ts: Sequence[Transcript], unparsed: str = "wrong", dataset: str = "") -> list[bool]:
    """Each scored debate's voted answer right or wrong; with `unparsed` "authors", a debate with no parsed answer
    as the paper's evaluator scores it (Du et al.'s: benchmarks/du.py), dropped where it drops it."""
    if unparsed != "authors":
        return [bool(m.final_correct(t)) for t in m.scored(ts)]
    return [ok for t in m.scored(ts) if (ok := authors_correct(t, dataset)) is not None]


def strata(n_agents: int) -> list[tuple[str, str, callable]]:
    """TrueMAD's R1 compositions for n agents (k = correct agents in round 0); for 4: k ≤ 1, k = 2, k ≥ 3, k ≤ 2."""
    half = n_agents / 2
    wrong, correct = math.ceil(half) - 1, math.floor(half) + 1
    return [("Wrong maj.", f"k ≤ {wrong}", lambda k: 2 * k < n_agents),
            ("Split", f"k = {half:g}" if n_agents % 2 == 0 else "—", lambda k: 2 * k == n_agents),
            ("Correct maj.", f"k ≥ {correct}", lambda k: 2 * k > n_agents),
            ("≥ Half wrong", f"k ≤ {math.floor(half)}", lambda k: 2 * k <= n_agents)]


def stratified(ts: Sequence[Transcript], n_agents: int) -> list[tuple[float, int]]:
    """Last-round agent accuracy within each R1 stratum (strata()), pooled; (value, questions) per stratum."""
    items = [t for t in m.scored(ts) if len(t.rounds[0].turns) == n_agents]
    out = []
    for _, _, holds in strata(n_agents):
        group = [t for t in items if holds(sum(m.agent_correct(t, 0)))]
        out.append((agent_accuracy(group), len(group)))
    return out


def mean_spread(values: Sequence[float], spread: str) -> tuple[float, float | None]:
    """(mean, SD over the values) for "sd"; for "se" the values are 0/1 items and the spread is std/√n."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return math.nan, None
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, None
    sd = statistics.stdev(values)
    return mean, sd if spread == "sd" else statistics.pstdev(values) / math.sqrt(len(values))


def pct(mean: float, spread: float | None = None, digits: int = 2) -> str:
    if math.isnan(mean):
        return "–"
    return f"{100 * mean:.{digits}f}" + ("" if spread is None else f" ± {100 * spread:.{digits}f}")


# --- layouts --------------------------------------------------------------------------------------

def _rows(p: Protocol, runs: Sequence[Results]) -> list[tuple[str, str]]:
    held = {name for r in runs for name, ts in r.by_method.items() if ts}
    return [(name, label) for name, label in p.rows if name in held]


def _per_seed(r: Results, method: str) -> list[list[Transcript]]:
    return [ts for seed in r.seeds if (ts := r.by_seed[seed].get(method))]


def agent_vote_tables(p: Protocol, runs: Sequence[Results]) -> list[str]:
    rows = []
    for name, label in _rows(p, runs):
        cells = [label]
        for r in runs:
            seeds = _per_seed(r, name)
            cells.append(pct(*mean_spread([agent_accuracy(ts) for ts in seeds], "sd")))
            cells.append(pct(*mean_spread([vote_accuracy(ts) for ts in seeds], "sd")) if is_debate(name) else "")
        rows.append(cells)
    header = ["Method", *(f"{r.benchmark} {what}" for r in runs for what in ("Agent ACC", "Vote ACC"))]
    out = ["", f"## {p.paper}: main results (Table 1 layout)", "", table(header, rows), "",
           f"{p.note} Seeds: {', '.join(map(str, runs[0].seeds))}."]
    for r in runs:
        depth = int(r.run["settings"]["rounds"])
        debaters = [(n, lab) for n, lab in _rows(p, [r]) if is_debate(n)]
        wise = [[lab, *(pct(*mean_spread([agent_accuracy(ts, i) for ts in _per_seed(r, n)], "sd"))
                        for i in range(1, depth))] for n, lab in debaters]
        agents = int(r.run["settings"]["agents"])
        heads = strata(agents)
        strat = [[lab, *(f"{pct(v, digits=1)} (n={k})" for v, k in
                         stratified([t for ts in _per_seed(r, n) for t in ts], agents))] for n, lab in debaters]
        out += ["", f"### {r.benchmark}: agent accuracy per round (Tables 4-6 layout)", "",
                table(["Method", *(f"R{i + 1}" for i in range(1, depth))], wise), "",
                f"### {r.benchmark}: R{depth} agent accuracy by R1 composition (Tables 7-9 layout)", "",
                table(["Method", *(f"{name} {k}" for name, k, _ in heads)], strat), "",
                "k = agents correct in R1; pooled over seeds; n = questions × seeds in the stratum."]
    return out


def accuracy_se_table(p: Protocol, runs: Sequence[Results],
                      factuality: dict[str, list[dict]] | None = None) -> list[str]:
    factuality = factuality or {}
    rows = []
    for name, label in _rows(p, runs):
        cells = [label]
        for r in runs:
            if r.run["dataset"] == "biographies":
                verdicts = [1.0 if v == "yes" else 0.0 for row in factuality.get(r.run["dataset"], [])
                            if row["method"] == name and not row["skipped"]
                            for v in row["verdicts"] if v in ("yes", "no")]
                cells.append(pct(*mean_spread(verdicts, "se"), digits=1) if verdicts else "run `factuality`")
            else:
                oks = plurality_accuracy(r.by_method.get(name, []), r.run.get("unparsed", "wrong"), r.run["dataset"])
                cells.append(pct(*mean_spread([float(ok) for ok in oks], "se"), digits=1))
        rows.append(cells)
    return ["", f"## {p.paper}: results (Tables 1-2 layout)", "",
            table(["Method", *(f"{r.benchmark} (%)" for r in runs)], rows), "", p.note,
            *(f"- {r.benchmark}: {line}" for r in runs for line in [choices_line(r.run, factuality)] if line)]


def choices_line(run: dict, factuality: dict[str, list[dict]]) -> str:
    """How a run's questions were picked and its unparsed answers scored (or its factuality read), in words."""
    if run["dataset"] == "biographies":
        readings = {row.get("reading", "words") for row in factuality.get("biographies", [])}
        return {frozenset({"authors"}): "factuality by the authors' reading of the judge (their prompt; "
                                        "'uncertain', else 'yes', else 'no' anywhere in its reply)",
                frozenset({"words"}): "factuality by our reading of the judge (its first whole word)"}.get(
                    frozenset(readings), "")
    picked = ("the authors' own draw of 100" if run.get("sample") == "authors" else
              f"the first {run['limit']} of the split" if run.get("limit") else "the whole split")
    unparsed = ("as the authors' evaluator scores it (dropped from arithmetic, correct in GSM8K and MMLU)"
                if run.get("unparsed") == "authors" else "wrong")
    return f"questions: {picked}; a question with no parsed answer: {unparsed}."


def accuracy_table(p: Protocol, runs: Sequence[Results]) -> list[str]:
    rows = [[label, *(pct(*mean_spread([m.accuracy(ts).value for ts in _per_seed(r, name)], "sd"), digits=1)
                      for r in runs)] for name, label in _rows(p, runs)]
    return ["", f"## {p.paper}: accuracy (its table layout)", "",
            table(["Method", *(r.benchmark for r in runs)], rows), "", p.note]


def sections(runs: Sequence[Results], factuality: dict[str, list[dict]] | None = None) -> list[str]:
    """The layout of the paper whose profile the (first) run used; none for other profiles."""
    p = protocol_of(runs[0].run["settings"].get("profile")) if runs else None
    if p is None:
        return []
    if p.layout == "accuracy-se":
        return accuracy_se_table(p, runs, factuality)
    return LAYOUTS[p.layout](p, runs)


def read_factuality(folder: str | Path) -> list[dict]:
    path = Path(folder) / FACTUALITY
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()] \
        if path.exists() else []


def write_paper_tables(results_dirs: Sequence[str | Path], out_path: str | Path) -> Path | None:
    """The paper's tables over several results folders (one per benchmark column); None when the runs used no
    paper's profile."""
    runs = [load_results(d) for d in results_dirs]
    facts = {r.run["dataset"]: read_factuality(d) for r, d in zip(runs, results_dirs)}
    lines = sections(runs, facts)
    if not lines:
        return None
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["# Paper layout", *lines]) + "\n", encoding="utf-8")
    return path


LAYOUTS = {"agent-vote": agent_vote_tables, "accuracy-se": accuracy_se_table, "accuracy": accuracy_table}
