"""Copy the debates an eval's ledger lists (the debate helped or hurt the round-0 vote) into the run store, so
the app's Inspect tab opens and annotates them. Run again, it adds only what is not there yet."""
from __future__ import annotations

from r2mad.engine.service import open_run
from r2mad.evaluation import paired
from r2mad.evaluation.results import Results
from r2mad.methods import is_debate

SOURCE = "eval"


def store_ledger(res: Results, store) -> dict[tuple[str, str], str]:
    """{(method, question id): run id} for every helped or hurt debate of the first seed."""
    ids = {}
    for name, ts in res.by_method.items():
        if not is_debate(name):
            continue
        for t in ts:
            if paired.ledger_kind(t) in ("helped", "hurt"):
                ids[(name, t.task.id)] = _existing(store, name, t, res) or _save(store, name, t, res)
    return ids


def _existing(store, method: str, t, res: Results) -> str | None:
    with store.transaction(write=False) as conn:
        row = conn.execute("SELECT id FROM runs WHERE source = ? AND method = ? AND task_id = ? AND backbone = ? "
                           "AND seed IS ?", (SOURCE, method, t.task.id, res.run["backbone"],
                                             t.settings.get("seed"))).fetchone()
    return row["id"] if row else None


def _save(store, method: str, t, res: Results) -> str:
    run_id = open_run(store, method=method, backbone=res.run["backbone"], bank=None, task=t.task,
                      settings=t.settings, seed=t.settings.get("seed"), source=SOURCE)
    store.save_transcript(run_id, t, t.status)
    return run_id
