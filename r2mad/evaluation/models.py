"""The report's account of the models behind an eval: which agent ran on which backbone in a mixed-model
run, each model's prices as run.json recorded them, and tokens and cost per model. Not for running
(evaluate.py) or for the other sections (report.py, trust.py)."""
from __future__ import annotations

from r2mad.evaluation.costs import Prices, format_cost, model_costs, prices_from
from r2mad.evaluation.results import Results, table
from r2mad.types import Usage


def price_table_of(run: dict) -> dict[str, Prices | None]:
    """Each model's prices as run.json holds them; a run from before mixed models has only its backbone's."""
    if run.get("prices_by_model"):
        return {name: prices_from(p) for name, p in run["prices_by_model"].items()}
    return {run.get("aux_backbone") or run["backbone"]: prices_from(run.get("prices"))}


def mix_line(run: dict) -> str | None:
    """Who ran on which model in a mixed-model run, in one sentence (None for a one-backbone run)."""
    names = run.get("agent_backbones")
    if not names:
        return None
    agents = ", ".join(f"agent {i + 1} on {name}" for i, name in enumerate(names))
    return (f"Mixed models: {agents}; summaries, judges and advice on {run.get('aux_backbone') or names[0]}; "
            f"single-agent baselines on agent 1's ({names[0]}).")


def per_model_section(res: Results) -> list[str]:
    """Tokens and cost per model over every row of the run (every method and seed), when more than one
    model made calls. A model without a price says "unknown"; the total is then unknown too."""
    usage: dict[str, Usage] = {}
    shared: set = set()  # (seed, question id) whose shared round 0 is counted already
    for seed, by_method in res.by_seed.items():
        for t in (t for ts in by_method.values() for t in ts):
            for rnd in t.rounds:
                if rnd.details.get("shared"):
                    if (seed, t.task.id) in shared:
                        continue
                    shared.add((seed, t.task.id))
                for item in (*rnd.turns, *rnd.aux):
                    if item.error is None:
                        name = item.backbone or t.backbone
                        usage[name] = usage.get(name, Usage()) + Usage(1, item.tokens_in, item.tokens_out)
    if len(usage) < 2:
        return []
    prices = price_table_of(res.run)
    costs = model_costs(usage, prices)
    rows = [[name, str(u.calls), str(u.tokens_in), str(u.tokens_out),
             "–" if costs is None else format_cost(costs[name])] for name, u in usage.items()]
    unknown = [name for name in usage if costs is not None and costs[name] is None]
    note = ("No model of this run has a price in configs/backbones.yaml, so there is no cost in money."
            if costs is None else
            f"No price in configs/backbones.yaml for {', '.join(unknown)}: its cost is unknown, and so is the "
            "run's total." if unknown else "Prices from configs/backbones.yaml, as run.json recorded them.")
    return ["", "## Tokens and cost per model", "",
            table(["Model", "Calls", "Input tokens", "Output tokens", "Cost"], rows), "",
            "Totals over every row of the run (all methods and sampling seeds; a round 0 shared by the debate "
            "methods counted once), agents' and auxiliary calls. "
            + note]
