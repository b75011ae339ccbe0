"""`python -m r2mad bench`: the subcommand and its modes. With no mode it prints the debate speed, sampling and
retrieval figures on scripted servers it starts itself; --memory, --parse and --load run the app or the embedded
model instead; --prefix and --scale run evals through vllm-router in front of scripted replicas. `--quick` runs
any mode in its quickest form (what the tests run: the figures exist, mean little)."""
from __future__ import annotations

import asyncio
from pathlib import Path

from r2mad.settings.config import CHECKOUT, ROOT


def register(sub) -> None:
    p = sub.add_parser("bench", help="print speed figures (debate concurrency, R²-MAD overhead, retrieval)")
    p.add_argument("--latency", type=float, default=1.0,
                   help="seconds per call of the scripted server (default 1: faster than any real backbone; "
                        "the embedded SmolLM2 takes about 4 s a call on 2 cores)")
    p.add_argument("--token-latency", type=float, default=0.02,
                   help="seconds per generated word for the per-token figure (0.02 = 50 tokens/s)")
    p.add_argument("--sizes", default="1000,10000,100000", help="bank sizes for the retrieval figures")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--memory", action="store_true",
                   help="instead: memory of the app and its model process, and a cold bank index build")
    p.add_argument("--parse", action="store_true",
                   help="instead: UNPARSED round answers on the embedded model, without and with the answer guard")
    p.add_argument("--limit", type=int, default=None, help="--parse: questions per demo test split")
    p.add_argument("--load", type=int, nargs="?", const=0, default=None, metavar="VISITORS",
                   help="instead: the embedded model's calls alone and in flight together, then the app under "
                        "VISITORS concurrent MAD debates through its API, one client each (8; times, tokens/s "
                        "against raw llama.cpp on the same prompts, peak memory)")
    p.add_argument("--no-early-stop", action="store_true",
                   help="--load: the app's debates run all their rounds (a heavier, steadier load than visitors')")
    p.add_argument("--kinds", action="store_true",
                   help="instead: what comparing answers (short and open kinds) costs beside MAD debates on the "
                        "embedded model, and how often the embedder loads")
    p.add_argument("--prefix", action="store_true",
                   help="instead: per method, the prompt tokens a prefix cache could serve and those served by 3 "
                        "scripted replicas behind vllm-router, with debate affinity and with round robin")
    p.add_argument("--scale", action="store_true",
                   help="instead: debates per hour of an MAD + R²-MAD eval on 1, 2 and 4 scripted replicas behind "
                        "vllm-router, and the driver's own ceiling against a server answering at once")
    p.add_argument("--serve", action="store_true",
                   help="instead: the OpenAI-compatible server's overhead over a direct debate, and --requests "
                        "requests at once (scripted backbone, --latency s per call)")
    p.add_argument("--requests", type=int, default=8, help="--serve: concurrent requests (8)")
    p.add_argument("--grading", action="store_true",
                   help="instead: the grader against the hand-graded sets (tests/graded) and GSM8K's published "
                        "solutions (--gsm8k), by rule and, with --judge-backbone, with a judge; and what a judge adds "
                        "to a debate's wall on a scripted backbone")
    p.add_argument("--graded", default=str(GRADED), help="--grading: the folder of the hand-graded sets")
    p.add_argument("--gsm8k", default=None,
                   help="--grading: gsm8k-example-model-solutions.jsonl (default: ../shared/data beside the checkout)")
    p.add_argument("--judge-backbone", default=None, help="--grading: grade what the rules leave undecided with it")
    p.add_argument("--quick", action="store_true",
                   help="the quickest form of a mode (tiny answers, one question, 2 visitors): checks it runs; "
                        "its figures are not the ones to quote")
    p.set_defaults(func=cmd_bench)


def cmd_bench(args, config) -> int:
    from r2mad.bench.retrieval import format_rows

    if args.prefix or args.scale:
        return fleet_figures(args)
    if args.serve:
        from r2mad.bench.serve import serve_figures

        latency = 0.01 if args.quick else args.latency
        print(f"Serve (scripted backbone, {latency:g} s per call; MAD, 3 agents x 3 rounds, early stop off):")
        print(format_rows(serve_figures(latency, 1 if args.quick else args.repeats,
                                        2 if args.quick else args.requests)))
        return 0
    if args.grading:
        return grading(args, config)
    if args.kinds:
        from r2mad.bench.appproc import QUICK_DEBATE
        from r2mad.bench.kinds import kind_figures

        shape = "2 agents x 2 rounds, 16 tokens" if args.quick else "3 agents x 3 rounds, early stop off"
        print(f"Answers compared (MAD on the embedded model, {shape}, seed 0; all-MiniLM-L6-v2; "
              "target <= 5 % of a debate's wall, and one embedder load):")
        print(format_rows([{"figure": f, "value": v} for f, v in kind_figures(**(QUICK_DEBATE if args.quick else {}))]))
        return 0
    if args.memory or args.parse or args.load is not None:
        from r2mad.bench import resources
        from r2mad.bench.appproc import QUICK_DEBATE

        if args.memory:
            print("Memory (resident, app process + its model process; targets: model loaded <= 700 MB, "
                  "every peak <= 1500 MB; cold index <= 20 s):")
            figures = resources.app_memory(**(QUICK_DEBATE if args.quick else {})) + resources.index_memory()
            print(format_rows([{"figure": f, "value": v} for f, v in figures]))
        if args.parse:
            quick = {**QUICK_DEBATE, "answer_guard": "on"} if args.quick else {}
            shape = "{agents} agents x {rounds} rounds, {max_tokens} tokens".format(**quick) if quick else \
                "3 agents x 3 rounds"
            print(f"Answers on the embedded model (MAD, {shape}, seed 0; target <= 5 % with the guard):")
            rates = resources.parse_rates(1 if args.quick else args.limit, **quick)
            print(format_rows([{"figure": f, "value": v} for f, v in rates]))
        if args.load is not None:
            import dataclasses

            from r2mad.bench.load import QUICK, LoadPlan, app_figures, model_figures

            plan = QUICK if args.quick else LoadPlan()
            if args.load:
                plan = dataclasses.replace(plan, visitors=args.load)
            if args.no_early_stop:
                plan = dataclasses.replace(plan, debate=plan.debate + (("early_stop", False),))
            stop = "early stop off" if args.no_early_stop else "early stop as configured"
            print(f"Load (embedded model, temperature 0, {plan.call_tokens}-token calls; then the app as `make run` "
                  f"starts it, {stop}, {plan.visitors} visitors through the public API):")
            print(format_rows(model_figures(plan)), flush=True)  # printed as soon as measured: the app's take long
            print(format_rows(app_figures(plan)))
        return 0
    if args.quick:
        args.latency, args.token_latency, args.repeats, args.sizes = 0.01, 0.0005, 1, "200"
    return speed_figures(args)


GRADED = ROOT / "tests" / "graded"  # shipped with an installed r2mad too (pyproject's data-files)


def grading(args, config) -> int:
    from r2mad.bench.grading import grading_figures, judge_cost_figures
    from r2mad.bench.retrieval import format_rows

    folder = Path(args.graded)
    gsm8k = Path(args.gsm8k) if args.gsm8k else CHECKOUT.parent / "shared" / "data" / \
        "gsm8k-example-model-solutions.jsonl"
    judge = None
    if args.judge_backbone:
        from r2mad.engine.resources import backend_for
        from r2mad.grading.judge import Judge

        judge = Judge(backend_for(config, args.judge_backbone))
    how = f"rules, then the judge {args.judge_backbone}" if judge else "rules alone"
    print(f"Grader ({how}) on {folder} and {gsm8k if gsm8k.is_file() else 'no GSM8K file (--gsm8k PATH)'}:")
    replies = [p for p in (folder / "replies.jsonl", folder / "heldout.jsonl") if p.is_file()]
    pairs = folder / "pairs.jsonl"
    print(format_rows([{"figure": f, "value": v} for f, v in grading_figures(
        replies, pairs if pairs.is_file() else None, gsm8k if gsm8k.is_file() else None, judge)]))
    latency = 0.01 if args.quick else args.latency
    print(f"\nWhat a judge adds (MAD, 3 agents x 3 rounds, early stop on; scripted backbones, {latency:g} s a call; "
          "agents answer 'Mozart' and 'W. A. Mozart' asked which composer: undecided by rule):")
    print(format_rows([{"figure": f, "value": v} for f, v in judge_cost_figures(latency)]))
    return 0


def fleet_figures(args) -> int:
    from r2mad.bench import fleetbench
    from r2mad.bench.retrieval import format_rows

    plan = fleetbench.QUICK if args.quick else fleetbench.FleetPlan()
    shape = (f"{plan.per_token_s:g} s per generated token, {plan.prefill_s:g} s per uncached prompt token, "
             f"{plan.slots} sequences at once per replica")
    if args.prefix:
        print(f"Prefix cache, per method ({plan.questions} debates each, 3 agents x 3 rounds, 3 scripted replicas "
              f"behind vllm-router; affinity = policy {fleetbench.AFFINITY_POLICY} on the debate's X-Session-ID; "
              "target: >= 95 % of a debate's calls on one replica, served within 5 points of the most):",
              flush=True)
        print(format_rows(fleetbench.prefix_figures(plan)), flush=True)
    if args.scale:
        print(f"Scale (eval of {', '.join(fleetbench.SCALE_METHODS)} on {plan.scale_questions} questions, "
              f"concurrency {plan.concurrency}, scripted replicas behind vllm-router: {shape}; targets: 4 "
              "replicas >= 3.6 x 1; ceiling >= 15 debates/s):", flush=True)
        print(format_rows(fleetbench.scale_figures(plan)))
    return 0


def speed_figures(args) -> int:
    from r2mad.bench.crafted import crafted_figures
    from r2mad.bench.retrieval import bench_retrieval, format_rows
    from r2mad.bench.sampling import SAMPLES, sampling_figures
    from r2mad.bench.scripted.server import FakeServer
    from r2mad.bench.speed import TASK, debate_figures, long_reply, reply_for

    def responder(body):
        behaviour = reply_for(body)
        behaviour.latency_s = args.latency
        return behaviour

    def per_token(body):
        behaviour = long_reply(body)
        behaviour.latency_s, behaviour.per_token_latency_s = 0.1, args.token_latency
        return behaviour

    with FakeServer(models=["bench"], responder=responder) as server, \
            FakeServer(models=["bench", "bench-full-summary"], responder=per_token) as token_server:
        rows = asyncio.run(debate_figures(server.base_url, token_server.base_url, args.repeats))
    print(f"Debate figures (scripted server, {args.latency:g} s per call, or 0.1 s + {args.token_latency:g} s "
          "per generated word where said; 3 agents x 3 rounds):")
    print(format_rows(rows))
    rows = []
    for slots, label in ((None, "any number of requests at once, "), (1, "one request at a time, ")):
        with FakeServer(models=["bench"], responder=responder, max_parallel=slots) as server:
            rows += sampling_figures(server, TASK, args.repeats, label)
    print(f"\nSelf-Consistency, {SAMPLES} samples (scripted server, {args.latency:g} s per request whatever its n, "
          "as a server that decodes a request's n samples as one batch):")
    print(format_rows(rows))
    print("\nCrafted answers (scripted server; the event loop keeps serving other debates meanwhile):")
    print(format_rows(crafted_figures()))
    sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    print("\nRetrieval (one agent-round; target <= 20 ms p50 at 10k cases):")
    print(format_rows(bench_retrieval(sizes=sizes)))
    return 0
