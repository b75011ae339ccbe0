"""`python -m r2mad bench --prefix` and `--scale`: eval runs through a real router (vllm-router) in front of
scripted replicas (scripted/replicas.py). --prefix: per method, how much of the prompt tokens a prefix cache could
serve at most (a prefix of an earlier call of the same debate) and how much the replicas served with debate
affinity and with round robin. --scale: debates per hour of an MAD + R²-MAD eval on 1, 2 and 4 replicas that
take time per token and decode a few sequences at once, and the driver's own ceiling against a server that
answers at once. Figures, not tests: nothing here asserts a time."""
from __future__ import annotations

import tempfile
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from r2mad.bench.fleet import replica_reply, run_through, synthetic_split
from r2mad.bench.router import Router
from r2mad.bench.scripted.replicas import ReplicasProcess
from r2mad.methods import FULL, PLAIN, REGISTRY

AFFINITY_POLICY = "sticky_least_loaded"  # a new debate goes to the least busy replica, then stays there
PREFIX_METHODS = tuple(name for name, spec in REGISTRY.items() if "main" in spec.tables)  # Table 1's methods
SCALE_METHODS = (PLAIN, FULL)


@dataclass(frozen=True)
class FleetPlan:
    questions: int = 24  # --prefix: debates per method and policy
    scale_questions: int = 32  # --scale: questions of the MAD + R²-MAD eval (64 debates)
    replicas: tuple[int, ...] = (1, 2, 4)
    per_token_s: float = 0.015  # a replica's seconds per generated token (about 67 tokens/s per sequence)
    prefill_s: float = 0.0002  # a replica's seconds per prompt token not served from its cache
    slots: int = 4  # sequences a replica decodes at once
    concurrency: int = 32  # questions in flight
    ceiling_questions: int = 120  # the driver's ceiling: MAD 3 x 3 debates against an instant server
    ceiling_concurrency: int = 64


QUICK = FleetPlan(questions=2, scale_questions=4, replicas=(1, 2), per_token_s=0.0005, prefill_s=0.0, slots=4,
                  concurrency=4, ceiling_questions=4, ceiling_concurrency=4)


def _bank(tmp: Path):
    from r2mad.bench.speed import _bank as demo_bank
    return demo_bank(tmp)


@contextmanager
def _fleet(count: int, policy: str, plan: FleetPlan):
    """`count` scripted replicas behind a real router: (the replicas, the router's OpenAI base URL)."""
    with ReplicasProcess(count, responder=replica_reply, per_token_s=plan.per_token_s, prefill_s=plan.prefill_s,
                         slots=plan.slots) as fleet, Router(fleet.urls, policy=policy) as router:
        yield fleet, router.base_url


def _tag(key: str) -> str:
    """The split's tag in an eval's debate key (dataset:tag-i:seed)."""
    return key.split(":")[1].rsplit("-", 1)[0]


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "-"


def prefix_figures(plan: FleetPlan = FleetPlan(), methods: tuple[str, ...] = PREFIX_METHODS) -> list[dict]:
    """One fleet per routing policy; each method debates questions of its own on it, so no method's prompts
    are in the cache for another's (the persona lines aside, which any debate's first call may reuse)."""
    served: dict[tuple[str, str], tuple[int, int]] = {}
    debates: dict[str, list[list]] = {}
    with tempfile.TemporaryDirectory(prefix="r2mad-prefix-") as tmp:
        bank = _bank(Path(tmp))
        for policy in (AFFINITY_POLICY, "round_robin"):
            with _fleet(3, policy, plan) as (fleet, url):
                for method in methods:
                    split = synthetic_split(plan.questions, tag=method)
                    figures = run_through(url, (method,), split, Path(tmp) / f"{method}-{policy}",
                                          concurrency=plan.concurrency, bank=bank)
                    usage = [r["tokens"] for r in figures.rows]
                    served[method, policy] = (sum(u["cached"] for u in usage), sum(u["input"] for u in usage))
                by_key = fleet.calls_by_key()
            if policy == AFFINITY_POLICY:
                for method in methods:
                    debates[method] = [calls for key, calls in by_key.items() if key and _tag(key) == method]
        bank.close()
    rows = []
    for method in methods:
        calls = sum(len(c) for c in debates[method])
        on_one = sum(Counter(s.replica for s in c).most_common(1)[0][1] for c in debates[method])
        shared = sum(s.shared for c in debates[method] for s in c)
        prompt = sum(s.prompt for c in debates[method] for s in c)
        rows.append({"method": method, "calls / debate": round(calls / max(len(debates[method]), 1), 1),
                     "calls on the debate's replica": _share(on_one, calls),
                     "most a cache can serve": _share(shared, prompt),
                     "served, affinity": _share(*served[method, AFFINITY_POLICY]),
                     "served, round robin": _share(*served[method, "round_robin"])})
    return rows


def scale_figures(plan: FleetPlan = FleetPlan()) -> list[dict]:
    rows, base = [], None
    with tempfile.TemporaryDirectory(prefix="r2mad-scale-") as tmp:
        bank = _bank(Path(tmp))
        for count in plan.replicas:
            with _fleet(count, AFFINITY_POLICY, plan) as (_, url):
                figures = run_through(url, SCALE_METHODS, synthetic_split(plan.scale_questions),
                                      Path(tmp) / f"scale-{count}", concurrency=plan.concurrency, bank=bank)
            per_hour = figures.debates_per_hour
            base = base or per_hour
            failed = sum(r["status"] != "done" for r in figures.rows)
            rows.append({"figure": f"{count} replica{'s' * (count > 1)}: debates per hour "
                                   f"({len(figures.rows)} debates in {figures.seconds:.1f} s"
                                   f"{f', {failed} failed' if failed else ''})",
                         "value": round(per_hour), "ratio to 1": round(per_hour / base, 2)})
        bank.close()
        rows.append(ceiling(plan, Path(tmp) / "ceiling"))
    return rows


def ceiling(plan: FleetPlan, out: Path) -> dict:
    """The driver alone: MAD 3 x 3 debates against one scripted server that answers at once."""
    with ReplicasProcess(1, responder=replica_reply) as server:
        figures = run_through(server.urls[0] + "/v1", (PLAIN,), synthetic_split(plan.ceiling_questions), out,
                              concurrency=plan.ceiling_concurrency)
    return {"figure": f"driver ceiling: MAD 3 x 3 debates per second against a server answering at once "
                      f"({plan.ceiling_questions} debates, concurrency {plan.ceiling_concurrency})",
            "value": round(len(figures.rows) / figures.seconds, 1), "ratio to 1": ""}
