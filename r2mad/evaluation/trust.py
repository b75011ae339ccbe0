"""The report's sections on whether a difference can be trusted and what it cost: paired comparisons, the
helped / hurt ledger, accuracy per round with its peak, spread over sampling seeds, compute-matched
baselines (with their plot), and cost in tokens, money and time. Not for the paper's tables (report.py)."""
from __future__ import annotations

import math
import statistics
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np

from r2mad.evaluation import budget, paired
from r2mad.evaluation import metrics as m
from r2mad.evaluation.costs import format_dollars, model_costs, total_cost
from r2mad.evaluation.models import per_model_section, price_table_of
from r2mad.evaluation.results import Results, fmt, fmt_tokens, label, save_plot, table
from r2mad.methods import SAMPLING, is_debate

REPORT_RNG_SEED = 0  # the bootstrap's generator: a report rebuilt from the same rows is the same report


def _present(res: Results) -> list[str]:
    return [n for n, ts in res.by_method.items() if m.scored(ts)]


def _signed(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:+.3f}"


def paired_section(res: Results) -> list[str]:
    names = _present(res)
    if len(names) < 2:
        return []
    rng = np.random.default_rng(REPORT_RNG_SEED)
    rows = []
    for a, b in combinations(names, 2):
        c = paired.compare(a, res.by_method[a], b, res.by_method[b], rng)
        interval = "–" if math.isnan(c.low) else f"[{c.low:+.3f}, {c.high:+.3f}]"
        rows.append([f"{label(a)} − {label(b)}", str(c.n), _signed(c.difference), interval,
                     f"{c.a_only} / {c.b_only}", f"{c.p_value:.4f}"])
    seed = f" (sampling seed {res.seeds[0]})" if len(res.seeds) > 1 else ""
    return ["", "## Paired comparisons", "",
            table(["A − B", "n", "Accuracy difference", "95% CI (paired bootstrap)", "A only / B only right",
                   "McNemar p (exact)"], rows), "",
            f"On the questions both methods scored{seed}: the difference of plurality accuracy with a paired "
            f"bootstrap interval ({paired.BOOTSTRAP_RESAMPLES:,} resamples of questions, percentile), and "
            "McNemar's exact two-sided test on the discordant questions (scipy). An interval that holds 0, or "
            "p ≥ 0.05, means these questions cannot tell the two methods apart."]


def ledger_section(res: Results, run_ids: dict | None = None) -> tuple[list[str], list[str]]:
    """(report lines, ledger.md lines): per debate method, questions where the debate turned the round-0
    vote right (helped) or wrong (hurt); `run_ids` {(method, question id): id} in the run store."""
    debaters = [n for n in _present(res) if is_debate(n)]
    if not debaters:
        return [], []
    rows, lines = [], ["# What the debate changed, per question", "",
                       "Round-0 vote (the agents' independent answers) against the final answer. To open a "
                       "debate in the app's Inspect tab, run `python -m r2mad eval --out DIR --report-only "
                       "--to-store` and paste its run id there; the whole transcript is also in rows.jsonl."]
    for name in debaters:
        entries = paired.ledger(res.by_method[name])
        counts = paired.ledger_counts(entries)
        rows.append([label(name), *(str(counts[k]) for k in paired.LEDGER_KINDS),
                     f"{counts['helped'] - counts['hurt']:+d}"])
        changed = [e for e in entries if e.kind in ("helped", "hurt")]
        lines += ["", f"## {label(name)}", ""]
        ids = run_ids or {}
        lines += [table(["Question", "Changed", "Round-0 vote", "Final", "Gold", "Run id (Inspect)"],
                        [[e.question_id, e.kind, e.round0, e.final, e.gold, ids.get((name, e.question_id), "–")]
                         for e in changed])
                  if changed else "The debate changed no question's outcome."]
    return (["", "## What the debate changed", "",
             table(["Method", *(k.capitalize() for k in paired.LEDGER_KINDS), "Net"], rows), "",
             "Helped: the round-0 vote was wrong and the final answer right; hurt: the reverse. Per question "
             "in [ledger.md](ledger.md)."], lines + [""])


def rounds_section(res: Results) -> list[str]:
    debaters = [n for n in _present(res) if is_debate(n)]
    if not debaters:
        return []
    curves = {n: m.vote_accuracy_by_round(res.by_method[n]) for n in debaters}
    depth = max(len(c) for c in curves.values())
    rows = [[label(n), *(fmt(c[i]) if i < len(c) else "–" for i in range(depth)),
             "–" if m.peak_round(c) is None else f"round {m.peak_round(c)}"] for n, c in curves.items()]
    return ["", "## Accuracy per round", "",
            table(["Method", *(f"Round {i}" for i in range(depth)), "Peak"], rows), "",
            "Plurality accuracy had the debate ended after each round (round 0: the agents' independent "
            "answers; an early-stopped debate keeps its last vote). Peak: the earliest best round; a peak "
            "before the last round means more debate hurt."]


def seeds_section(res: Results) -> list[str]:
    if len(res.seeds) < 2:
        return []
    names = [n for n in res.run["methods"] if all(m.scored(res.by_seed[s].get(n, [])) for s in res.seeds)]
    accs = {n: [m.accuracy(res.by_seed[s][n]).value for s in res.seeds] for n in names}
    spread = {n: statistics.stdev(v) for n, v in accs.items()}
    rows = [[label(n), *(fmt(x) for x in v), fmt(statistics.fmean(v)), fmt(spread[n])] for n, v in accs.items()]
    out = ["", "## Sampling seeds", "",
           table(["Method", *(f"Seed {s}" for s in res.seeds), "Mean", "SD"], rows), ""]
    verdicts = []
    for a, b in combinations(names, 2):
        diff = statistics.fmean(accs[a]) - statistics.fmean(accs[b])
        inside = abs(diff) <= max(spread[a], spread[b])
        verdicts.append([f"{label(a)} − {label(b)}", _signed(diff), fmt(max(spread[a], spread[b])),
                         "inside the seed spread" if inside else "outside the seed spread"])
    if verdicts:
        out += [table(["A − B", "Mean difference", "Larger SD", "Verdict"], verdicts), ""]
    out.append(f"Each method ran with {len(res.seeds)} sampling seeds on the same questions; SD is the sample "
               "standard deviation over seeds. A difference no larger than the larger of the two SDs is inside "
               "the seed spread: another seed could reverse it. Other sections use the first seed.")
    return out


def compute_matched_section(res: Results) -> list[str]:
    curve = budget.sc_curve(res.by_method.get(SAMPLING, []))
    if not curve:
        return []
    out = ["", "## Compute-matched baselines", "",
           table(["Self-Consistency samples k", "Tokens per question", "Accuracy"],
                 [[str(p.k), fmt_tokens(p.tokens), fmt(p.accuracy)] for p in curve]), ""]
    rows = []
    for name in _present(res):
        if name == SAMPLING:
            continue
        point = budget.matched(curve, res.by_method[name])
        rows.append([label(name), fmt_tokens(point.tokens), fmt(point.accuracy), fmt(point.sc_accuracy),
                     _signed(point.difference), _verdict(point, curve)])
    if rows:
        out += [table(["Method", "Tokens per question", "Accuracy", "Self-Consistency at the same tokens",
                       "Difference", "Verdict"], rows), ""]
    out.append("Self-Consistency's stored samples voted in every k-subset (exact expected accuracy of k random "
               "samples); its tokens for k samples are k/N of its tokens. Beyond the curve: the method costs "
               "more than all N samples, compared with N. The differences are not tested; see Paired comparisons."
               " ![compute-matched](compute_matched.png)")
    return out


def _verdict(point: budget.Matched, curve: list[budget.CurvePoint]) -> str:
    better = point.difference > 0
    if point.where == "on the curve":
        return "beats voting at the same cost" if better else "does no better than voting at the same cost"
    if point.where == "beyond the curve":
        ratio = point.tokens / curve[-1].tokens
        return (f"{'beats' if better else 'does no better than'} voting with all {curve[-1].k} samples, "
                f"at {ratio:.1f}× their tokens")
    return f"{'beats' if better else 'does no better than'} one sample, for fewer tokens"


def cost_section(res: Results) -> list[str]:
    prices = price_table_of(res.run)
    rows = []
    for name, ts in res.by_method.items():
        if not ts:
            continue
        c, n = m.cost(ts), len(ts)
        totals = [total_cost(model_costs(t.usage_by_model(), prices)) for t in ts]  # None: a price unknown
        money = ("–" if not any(prices.values()) else "unknown" if None in totals
                 else format_dollars(sum(x for x in totals if x is not None) / n))
        calls = [r.get("call_seconds", m.call_seconds(t)) for r, t in zip(_rows_of(res, name), ts)]
        walls = res.seconds(name)
        rows.append([label(name), fmt_tokens(c["debate_tokens"]), fmt_tokens(c["summary_tokens"]),
                     fmt_tokens(c["auxiliary_tokens"]), money,
                     f"{sum(calls) / len(calls):.2f}" if calls else "–",
                     f"{sum(walls) / len(walls):.2f}" if walls else "–"])
    price_note = _price_note(prices)
    shared = "the run's backbones" if res.run.get("agent_backbones") else "one backbone"
    time_note = ("This backend answers one call at a time (calls were serialised): wall time is mostly waiting "
                 "in line behind other calls (other methods' or other questions'); call time is what this "
                 "question's calls took."
                 if res.run.get("serial_calls") else
                 f"Questions and methods ran concurrently on {shared}, so wall time includes sharing it.")
    out = ["", "## Cost per query (Table 10 layout)", "",
           table(["Method", "Debate tokens", "Summary tokens", "Auxiliary tokens (judge, advice)", "Cost",
                  "Call s", "Wall s"], rows), "",
           "Means per question; tokens are prompt + completion of successful calls. " + price_note +
           " Call s: the question's calls added up (a shared round 0 included; samples answered by one request "
           "with n each count that request's time); wall s: from its start to its end, a shared round 0 "
           "included. " + time_note]
    providers = Counter(p for ts in res.by_method.values() for t in ts for rnd in t.rounds
                        for p in [*(x.provider for x in rnd.turns), *(x.provider for x in rnd.aux)] if p)
    if providers:
        out.append("Providers that served the calls: " + ", ".join(f"{p} ({k} calls)" for p, k in
                                                                   providers.most_common()) + ".")
    return out + cached_lines(res) + per_model_section(res)


def cached_lines(res) -> list[str]:
    """Per method, the prompt tokens the servers' prefix caches served (vLLM's cached_tokens), when any did."""
    totals = {}
    for name, ts in res.by_method.items():
        usage = [t.usage() for t in ts]
        totals[name] = (sum(u.tokens_cached for u in usage), sum(u.tokens_in for u in usage))
    if not any(cached for cached, _ in totals.values()):
        return []
    return ["Prompt tokens served from the servers' prefix caches (usage.prompt_tokens_details.cached_tokens): "
            + "; ".join(f"{name} {c / p:.1%} ({c:,} of {p:,})" for name, (c, p) in totals.items() if p) + "."]


def _price_note(prices: dict) -> str:
    if not any(prices.values()):
        return ("No prices for this backbone in configs/backbones.yaml (price_input_per_m, price_output_per_m)."
                if len(prices) == 1 else "No prices for these backbones in configs/backbones.yaml.")
    if len(prices) == 1:
        [p] = prices.values()
        return (f"Cost at ${p.input_per_m:g} per million input and ${p.output_per_m:g} per million output tokens "
                "(configs/backbones.yaml).")
    each = "; ".join(f"{name} ${p.input_per_m:g} in / ${p.output_per_m:g} out" if p else f"{name} price unknown"
                     for name, p in prices.items())
    return (f"Cost per model, in dollars per million tokens (configs/backbones.yaml): {each}; a method with a "
            "call on a model of unknown price has an unknown cost.")


def _rows_of(res: Results, method: str) -> list[dict]:
    return [r for r in res.rows if r["method"] == method]


def sections(res: Results) -> list[str]:
    return [*paired_section(res), *ledger_section(res)[0], *rounds_section(res), *seeds_section(res),
            *compute_matched_section(res)]


def write_ledger(res: Results, path: Path, run_ids: dict | None = None) -> Path | None:
    lines = ledger_section(res, run_ids)[1]
    if lines:
        path.write_text("\n".join(lines), encoding="utf-8")
        return path
    return None


def plot_compute_matched(res: Results, path: Path, plt) -> Path | None:
    """Self-Consistency's accuracy-vs-tokens curve with every other method as a point on it."""
    curve = budget.sc_curve(res.by_method.get(SAMPLING, []))
    if not curve:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.plot([p.tokens for p in curve], [p.accuracy for p in curve], "-o", color="grey",
            label="Self-Consistency, k samples")
    for p in curve:
        ax.annotate(f"k={p.k}", (p.tokens, p.accuracy), textcoords="offset points", xytext=(0, 7), fontsize=7,
                    ha="center")
    for i, name in enumerate(n for n in _present(res) if n != SAMPLING):
        point = budget.matched(curve, res.by_method[name])
        ax.plot([point.tokens], [point.accuracy], "osD^vPX*<>"[i % 10], markersize=8, label=label(name))
    ax.legend(fontsize=8)
    ax.set(xlabel="tokens per question", ylabel="accuracy (plurality)", ylim=(-0.02, 1.02),
           title=f"Compute-matched: {res.benchmark} on {res.run['backbone']}")
    return save_plot(plt, fig, ax, path)
