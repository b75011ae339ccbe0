"""The dataset card (README.md) of an annotation export: front matter for the Hub viewer, the label
taxonomy, the agreement figures per label, the detectors' precision and recall, and the schema."""
from __future__ import annotations

from typing import Any, Sequence

from r2mad.annotation import agreement
from r2mad.annotation.book import LabelBook

FRONT = """---
pretty_name: R²-MAD Studio debate failure annotations
tags: [multi-agent-debate, annotation, llm-evaluation]
configs:
- config_name: labels
  data_files: labels.parquet
  default: true
- config_name: runs
  data_files: runs.parquet
---
"""


def _cell(value: Any) -> str:
    text = "—" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def agreement_tables(book: LabelBook) -> tuple[list[agreement.LabelAgreement], list[agreement.DetectorScore]]:
    humans, taxonomy = book.human_labels(), list(book.store.taxonomy)
    suggested: dict[str, set[str]] = {}
    for s in book.suggestions():
        suggested.setdefault(s.run_id, set()).add(s.label)
    finals = {run: f.labels for run, f in book.finals().items()}
    detectable = sorted({s.label for s in book.suggestions()} & set(taxonomy), key=taxonomy.index)
    return (agreement.label_agreement(humans, taxonomy), agreement.detector_scores(suggested, finals, detectable))


def agreement_markdown(book: LabelBook) -> str:
    per_label, detectors = agreement_tables(book)
    lines = ["| label | runs | Cohen's κ | Fleiss' κ | Krippendorff's α |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {_cell(a.label)} | {a.n} | {_cell(a.cohen)} | {_cell(a.fleiss)} | {_cell(a.alpha)} |"
              for a in per_label]
    lines += ["", f"Detectors against the final labels of {len(book.finals())} adjudicated run(s):", "",
              "| label | precision | recall | TP | FP | FN |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {_cell(d.label)} | {_cell(d.precision)} | {_cell(d.recall)} | {d.true_pos} | {d.false_pos} | "
              f"{d.false_neg} |" for d in detectors]
    return "\n".join(lines)


def dataset_card(book: LabelBook, runs: int, labels: Sequence[dict[str, Any]]) -> str:
    kinds = {k: sum(1 for r in labels if r["kind"] == k) for k in ("human", "detector", "final")}
    taxonomy = "\n".join(f"| `{_cell(k)}` | {_cell(v)} |" for k, v in book.store.taxonomy.items())
    return f"""{FRONT}
# Why multi-agent debates fail: annotations from R²-MAD Studio

{runs} debate runs; {kinds['human']} human labels, {kinds['detector']} detector suggestions and
{kinds['final']} adjudicated final labels.

## Taxonomy

| label | description |
| --- | --- |
{taxonomy}

## Agreement between annotators

Per label, over the runs that two or more people labelled. Cohen's κ only when exactly two people
labelled; Fleiss' κ over the runs with the most common number of annotators; Krippendorff's α
(nominal) over all of them. "—" means undefined (too few runs or one value only).

{agreement_markdown(book)}

## Files and schema

- `labels.parquet`: one row per label. `kind` is `human`, `detector` or `final`; `annotator` is the
  person, the detector's name or the adjudicator; `round` and `agent` (0-based, as in transcripts)
  point at the turn a label blames; `agents` lists every agent a detector named; `evidence` (JSON)
  holds a detector's numbers and text span; `reviews` (JSON) who confirmed or rejected it.
- `runs.parquet`: one row per run with every stored column; `settings`, `task`, `transcript` and
  `annotations` (with their edit history) are JSON. Secrets were scrubbed before export.
"""


def votes_section(votes: int) -> str:
    """The card's words on votes.parquet (visitors' blind votes on side-by-side comparisons)."""
    return f"""- `votes.parquet`: {votes} visitors' blind votes, one row per visitor per side-by-side comparison:
  the debate whose reasoning convinced them most, chosen before the methods' names and the gold answer
  were shown. `comparison` is the comparison's run ids, sorted and joined by commas; `runs` (JSON) maps
  each method to its run, `shown` (JSON) the label the visitor saw ("Debate A") to its method; `winner`
  is the chosen run and `winner_method` its method; `voter` is a hash of the visitor's key (never the
  key), `username` their Hugging Face login when signed in.
"""
