"""`factuality`: score an eval of Du et al.'s biographies the authors' way — a judge asked, per ground-truth
bullet, whether each agent's last biography agrees with it (evaluation/benchmarks/biographies.py) — into
OUT/factuality.jsonl, and print each method's score (and Du et al.'s table under `--profile du`)."""
from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

from r2mad.settings.config import ConfigError

READING_WORDS = {"authors": "the authors' reading (their prompt; 'uncertain', else 'yes', else 'no' anywhere in the "
                            "judge's reply)",
                 "words": "our reading (our prompt; the judge's first whole word yes / no / uncertain)"}


async def score_folder(res, judge, reading: str) -> list[dict]:
    """One row per (question, method, seed, last-round agent), in the results' order."""
    from r2mad.evaluation.benchmarks.biographies import score_transcript

    rows = []
    for seed, methods in res.by_seed.items():
        for method, transcripts in methods.items():
            for t in transcripts:
                if t.status != "done" or not t.rounds:
                    continue
                for s in await score_transcript(t, judge, reading=reading):
                    rows.append({**dataclasses.asdict(s), "verdicts": list(s.verdicts), "method": method, "seed": seed,
                                 "reading": reading})
    return rows


def cmd_factuality(args, config) -> int:
    from r2mad.engine.resources import backend_for
    from r2mad.evaluation.benchmarks.biographies import factuality
    from r2mad.evaluation.paper_tables import FACTUALITY, sections
    from r2mad.evaluation.results import load_results

    out = Path(args.out)
    if not (out / "run.json").exists():
        raise ConfigError(f"{out} has no run.json; run `python -m r2mad eval --task biographies --data article.json "
                          f"--out {out}` first.")
    res = load_results(out)
    if res.run["dataset"] != "biographies":
        raise ConfigError(f"{out} holds an eval of {res.run['dataset']}; factuality scores biographies only.")
    name = args.backbone or res.run.get("aux_backbone") or res.run["backbone"]
    rows = asyncio.run(score_folder(res, backend_for(config, name), args.reading))
    (out / FACTUALITY).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"Judge {name}, {READING_WORDS[args.reading]}: {len(rows)} agent biographies scored into "
          f"{out / FACTUALITY}.")
    for method in res.run["methods"]:
        mine = [r for r in rows if r["method"] == method]
        score = factuality(v for r in mine if not r["skipped"] for v in r["verdicts"])
        skipped = sum(r["skipped"] for r in mine)
        print(f"{method}: factuality {'–' if score is None else f'{100 * score:.1f}%'} (yes among yes and no; "
              f"{skipped} of {len(mine)} biographies skipped as 'does not know')")
    for line in sections([res], {"biographies": rows}):
        print(line)
    return 0


def register(sub) -> None:
    p = sub.add_parser("factuality", help="score an eval of Du et al.'s biographies with a judge, per agent",
                       description="Writes OUT/factuality.jsonl: per agent biography, the judge's yes / no / "
                       "uncertain for each ground-truth bullet; the score is yes / (yes + no), no majority vote.")
    p.add_argument("--out", required=True, help="the results folder of `eval --task biographies`")
    p.add_argument("--backbone", default=None, help="the judge's backbone (default: the run's own)")
    p.add_argument("--reading", choices=("authors", "words"), default="authors",
                   help="authors (default): Du et al.'s judge prompt and their reading of its reply (uncertain, else "
                        "yes, else no anywhere in it; an empty biography judged); words: ours (the reply's first "
                        "whole word; an empty biography skipped)")
    p.set_defaults(func=cmd_factuality)
