"""The dataset card (README.md) of an annotation export: front matter for the Hub viewer, the label
taxonomy, the agreement figures per label, the detectors' precision and recall, and the schema."""
from __future__ import annotations

from typing import Any, Sequence

from r2mad.annotation import agreement, mast
from r2mad.annotation.book import LabelBook
from r2mad.annotation.judge_book import judge_markdown

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
    found = [s for s in book.suggestions() if not s.detector.startswith("llm:")]  # judges: judge_book.py
    for s in found:
        suggested.setdefault(s.run_id, set()).add(s.label)
    finals = {run: f.labels for run, f in book.finals().items()}
    detectable = sorted({s.label for s in found} & set(taxonomy), key=taxonomy.index)
    return (agreement.label_agreement(humans, taxonomy), agreement.detector_scores(suggested, finals, detectable))


def caution(runs: int) -> str:
    """A warning line when κ/α rest on fewer runs than agreement.MIN_RUNS, else ''."""
    if runs >= agreement.MIN_RUNS:
        return ""
    return (f"**Caution:** only {runs} run(s) were labelled by two or more people; κ and α on fewer than "
            f"{agreement.MIN_RUNS} runs swing widely with one changed label, so read them as a first look, "
            "not a measurement.")


def agreement_markdown(book: LabelBook) -> str:
    per_label, detectors = agreement_tables(book)
    runs = max((a.n for a in per_label), default=0)
    lines = [caution(runs), ""] if caution(runs) else []
    lines += ["| label | runs | Cohen's κ | Fleiss' κ | Krippendorff's α |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {_cell(a.label)} | {a.n} | {_cell(a.cohen)} | {_cell(a.fleiss)} | {_cell(a.alpha)} |"
              for a in per_label]
    blamed = [b for b in agreement.blame_agreement(book.human_blame(), book.store.taxonomy) if b.pairs]
    if blamed:
        lines += ["", "Blamed turns: the Jaccard overlap of two people's sets of turns for the same label on the "
                  "same run (1 = the same turns), averaged over pairs:", "",
                  "| label | pairs | mean Jaccard |", "| --- | --- | --- |"]
        lines += [f"| {_cell(b.label)} | {b.pairs} | {_cell(b.mean_jaccard)} |" for b in blamed]
    lines += ["", f"Detectors against the final labels of {len(book.finals())} adjudicated run(s):", "",
              "| label | precision | recall | TP | FP | FN |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {_cell(d.label)} | {_cell(d.precision)} | {_cell(d.recall)} | {d.true_pos} | {d.false_pos} | "
              f"{d.false_neg} |" for d in detectors]
    lines += ["", "LLM judges against the same final labels (κ: judge vs. adjudicator, per label):", "",
              judge_markdown(book)]
    return "\n".join(lines)


def dataset_card(book: LabelBook, runs: int, labels: Sequence[dict[str, Any]]) -> str:
    kinds = {k: sum(1 for r in labels if r["kind"] == k) for k in ("human", "detector", "llm", "final")}
    taxonomy = "\n".join(f"| `{_cell(k)}` | {_cell(v)} | {_cell(mast.mast_name(k))} |"
                         for k, v in book.store.taxonomy.items())
    return f"""{FRONT}
# Why multi-agent debates fail: annotations from R²-MAD Studio

{runs} debate runs; {kinds['human']} human labels, {kinds['detector']} detector suggestions,
{kinds['llm']} LLM judge suggestions and {kinds['final']} adjudicated final labels.

## Taxonomy

The last column names the closest failure mode of MAST, the multi-agent failure taxonomy of Cemri et
al. (2025, "Why do multi-agent LLM systems fail?"; 14 modes in 3 categories); — where none is close.

| label | description | closest MAST mode |
| --- | --- | --- |
{taxonomy}

## Agreement between annotators

Per label, over the runs that two or more people labelled. Cohen's κ only when exactly two people
labelled; Fleiss' κ over the runs with the most common number of annotators; Krippendorff's α
(nominal) over all of them. "—" means undefined (too few runs or one value only).

{agreement_markdown(book)}

## Files and schema

- `labels.parquet`: one row per label. `kind` is `human`, `detector`, `llm` (an LLM judge's proposal,
  its quote in `evidence`) or `final`; `annotator` is the person, the detector's or judge's name
  (`llm:<backbone>`) or the adjudicator; `round` and `agent` (0-based, as in transcripts) point at the turn
  a label blames (the first, when it blames several); `turns` lists every blamed turn as [round, agent]
  pairs; `mast` is the label's closest MAST mode; `agents` lists every agent a detector named; `evidence`
  (JSON) holds a detector's numbers and text span; `reviews` (JSON) who confirmed or rejected it.
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
