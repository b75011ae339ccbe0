"""The annotation dataset: a folder with labels.parquet (one flat row per label, human, detector or
final), runs.parquet (every run whole, for a lossless import) and a dataset card (README.md) listing
the taxonomy and the agreement figures; writing, reading back and moving it to and from the Hub."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from r2mad.annotation import card
from r2mad.annotation.book import LabelBook, blame_turns, blame_value
from r2mad.annotation.detectors import NO_LABEL, VERSION
from r2mad.annotation.mast import mast_name
from r2mad.runs.annotations import FinalLabels
from r2mad.runs.io import export_records, import_records
from r2mad.runs.records import REDACTED, dumps
from r2mad.runs.suggestions import StoredSuggestion
from r2mad.runs.votes import VoteStore
from r2mad.safewrite import atomic_open

LABEL_COLUMNS = ("run", "method", "backbone", "question", "gold", "final", "correct", "label", "kind",
                 "annotator", "round", "agent", "agents", "turns", "mast", "evidence", "summary", "note", "reviews",
                 "created_at")
_RUN_JSON = ("settings", "task", "transcript", "annotations")


def _label_schema():
    import pyarrow as pa
    return pa.schema([("run", pa.string()), ("method", pa.string()), ("backbone", pa.string()),
                      ("question", pa.string()), ("gold", pa.string()), ("final", pa.string()),
                      ("correct", pa.bool_()), ("label", pa.string()), ("kind", pa.string()),
                      ("annotator", pa.string()), ("round", pa.int64()), ("agent", pa.int64()),
                      ("agents", pa.list_(pa.int64())), ("turns", pa.list_(pa.list_(pa.int64()))),
                      ("mast", pa.string()), ("evidence", pa.string()), ("summary", pa.string()),
                      ("note", pa.string()), ("reviews", pa.string()), ("created_at", pa.float64())])


def _vote_schema():
    import pyarrow as pa
    return pa.schema([("comparison", pa.string()), ("voter", pa.string()), ("username", pa.string()),
                      ("winner", pa.string()), ("winner_method", pa.string()), ("runs", pa.string()),
                      ("shown", pa.string()), ("created_at", pa.float64())])


def label_rows(book: LabelBook, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The flat schema: per run, each human label (with its blamed turn), each detector suggestion
    (with evidence and reviews) and each adjudicated final label. Agents are 0-based, as in transcripts."""
    finals, rows = book.finals(), []
    by_run: dict[str, list] = {}
    for s in book.suggestions():
        by_run.setdefault(s.run_id, []).append(s)
    for r in records:
        base = {"run": r["id"], "method": r["method"], "backbone": r["backbone"], "question": r["question"],
                "gold": r["gold"], "final": r["final_answer"], "correct": r["correct"]}
        for a in r["annotations"]:
            for label in a["labels"]:
                rows.append({**base, **_blamed(a["blame"].get(label)), "label": label, "mast": mast_name(label),
                             "kind": "human", "annotator": a["annotator"], "evidence": "{}", "summary": "",
                             "note": a["note"], "reviews": "{}", "created_at": a["updated_at"]})
        for s in by_run.get(r["id"], []):
            named = s.agents if s.label == NO_LABEL else s.agents[:1]  # a replay names every turn it changed
            kind = "llm" if s.detector.startswith("llm:") else "detector"  # an LLM judge's (judge.py)
            rows.append({**base, "label": s.label, "mast": mast_name(s.label), "kind": kind,
                         "annotator": s.detector, "round": s.round, "agent": s.agents[0] if s.agents else None,
                         "agents": list(s.agents), "turns": [] if s.round is None else [[s.round, a] for a in named],
                         "evidence": dumps(s.evidence), "summary": s.summary, "note": "",
                         "reviews": dumps(s.reviews), "created_at": None})
        final = finals.get(r["id"])
        for label in final.labels if final else ():
            rows.append({**base, **_blamed(final.blame.get(label)), "label": label, "mast": mast_name(label),
                         "kind": "final", "annotator": final.adjudicator, "evidence": "{}", "summary": "", "note": "",
                         "reviews": "{}", "created_at": final.decided_at})
    return rows


def _blamed(value: Any) -> dict[str, Any]:
    """round/agent (the first blamed turn), agents and turns (every one) of a label's stored blame."""
    turns = blame_turns(value)
    return {"round": turns[0][0] if turns else None, "agent": turns[0][1] if turns else None,
            "agents": sorted({a for _, a in turns}), "turns": [list(t) for t in turns]}


def write_dataset(book: LabelBook, folder: str | Path, run_ids: Sequence[str] | None = None) -> dict[str, int]:
    """Write labels.parquet, runs.parquet, votes.parquet (visitors' blind votes on comparisons among these
    runs, r2mad.runs.votes) and README.md into `folder`; returns row counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    book.detect(run_ids)
    records = export_records(book.store, run_ids)  # scrubbed
    labels = label_rows(book, records)
    folder = Path(folder)
    runs = [{k: dumps(v) if k in _RUN_JSON else v for k, v in r.items()} for r in records]
    votes = [v.row() for v in VoteStore(book.store).votes(r["id"] for r in records)]
    # all four or none: each is renamed into place only once every one was written (a full disk: none)
    with atomic_open(folder / "labels.parquet", "wb") as label_file, \
            atomic_open(folder / "runs.parquet", "wb") as runs_file, \
            atomic_open(folder / "votes.parquet", "wb") as votes_file, \
            atomic_open(folder / "README.md", "w", encoding="utf-8") as readme:
        pq.write_table(pa.Table.from_pylist(labels, schema=_label_schema()), label_file)
        pq.write_table(pa.Table.from_pylist(runs), runs_file)
        pq.write_table(pa.Table.from_pylist(votes, schema=_vote_schema()), votes_file)
        readme.write(card.dataset_card(book, len(runs), labels) + card.votes_section(len(votes)))
    return {"runs": len(runs), "labels": len(labels), "votes": len(votes)}


def read_dataset(book: LabelBook, folder: str | Path) -> int:
    """Import a dataset folder written by write_dataset: runs and human labels (newer copies win),
    detector suggestions with their reviews, final labels. Returns runs added or changed."""
    import pyarrow.parquet as pq
    folder = Path(folder)
    missing = [n for n in ("runs.parquet", "labels.parquet") if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {', '.join(missing)}; import a folder written by "
                                "`python -m r2mad export --out DIR`.")
    runs = pq.read_table(folder / "runs.parquet").to_pylist()
    records = [{k: json.loads(v) if k in _RUN_JSON and v is not None else v for k, v in r.items()} for r in runs]
    changed = import_records(book.store, records, str(folder / "runs.parquet"))
    labels = pq.read_table(folder / "labels.parquet").to_pylist()
    store, known = book.store, {r["id"]: r["updated_at"] for r in records}
    store.restore_suggestions(known, VERSION, [
        StoredSuggestion(0, row["run"], row["label"], row["annotator"], row["round"], tuple(row["agents"]),
                         row["summary"], json.loads(row["evidence"]), json.loads(row["reviews"]))
        for row in labels if row["kind"] in ("detector", "llm")])
    finals: dict[str, FinalLabels] = {}
    for row in labels:
        if row["kind"] == "final":
            found = finals.get(row["run"]) or FinalLabels(row["run"], (), {}, row["annotator"], row["created_at"])
            turns = [tuple(t) for t in row.get("turns") or []] or (
                [(row["round"], row["agent"])] if row["agent"] is not None else [])  # older exports: one turn
            blame = {**found.blame, row["label"]: blame_value(turns)} if turns else found.blame
            finals[row["run"]] = replace(found, labels=(*found.labels, row["label"]), blame=blame)
    store.restore_final_labels(list(finals.values()))
    if (folder / "votes.parquet").is_file():  # written since the votes came (issue 31)
        VoteStore(store).add_rows(pq.read_table(folder / "votes.parquet").to_pylist())
    return changed


def _api(api: Any, token: str | None, endpoint: str | None) -> Any:
    if api is not None:
        return api
    from huggingface_hub import HfApi
    return HfApi(token=token, endpoint=endpoint or None)


def push_dataset(folder: str | Path, repo_id: str, token: str | None, api: Any = None,
                 endpoint: str | None = None) -> str:
    """Upload a dataset folder to a Hugging Face dataset repo (created if missing); returns its URL.
    `endpoint`: another Hub (HF_ENDPOINT), e.g. a mirror or a local stand-in."""
    if not token:
        raise ValueError("No Hugging Face token given; set HF_TOKEN (or log in) to push the dataset.")
    if "/" not in repo_id:
        raise ValueError(f"Dataset repo {repo_id!r} needs the form user/name; add the owner.")
    api = _api(api, token, endpoint)
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                          commit_message="R²-MAD Studio annotations")
    except Exception as exc:  # the library's message may echo request headers
        raise RuntimeError(f"Pushing the dataset to {repo_id} failed ({_first_line(exc, token)}); "
                           "check the repo id and that the token can write to it.") from None
    return f"{(endpoint or 'https://huggingface.co').rstrip('/')}/datasets/{repo_id}"


def pull_dataset(repo_id: str, folder: str | Path, token: str | None = None, api: Any = None,
                 endpoint: str | None = None) -> Path:
    """Download a dataset repo's files into `folder` for read_dataset."""
    api = _api(api, token, endpoint)
    try:
        return Path(api.snapshot_download(repo_id=repo_id, repo_type="dataset", local_dir=str(folder)))
    except Exception as exc:
        raise RuntimeError(f"Downloading dataset {repo_id} failed ({_first_line(exc, token)}); check the repo id, "
                           "the network and, for a private repo, HF_TOKEN.") from None


def _first_line(exc: Exception, token: str | None) -> str:
    """The library's message cut to its first line, with the token (if echoed) redacted."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
    return text.replace(token, REDACTED) if token else text
