"""How suggestions reach an annotator: grouped per run by label and source (one row "wrong_confidence
×6" with every piece of evidence), each source's precision against adjudicated labels beside it, and
whether the row starts ticked. Generic over sources (detectors, blame's counterfactuals, an LLM judge):
a source is whatever name a suggestion carries. Pure functions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from r2mad.annotation import agreement
from r2mad.annotation.mast import ABOUT_RIGHT_RUNS

PRECISION_FLOOR = 0.5  # a source whose precision on a label is below this starts unticked
UNMEASURED = "precision not measured yet (no adjudicated run to check it against); tick it if it holds"


@dataclass(frozen=True)
class SuggestionGroup:
    label: str  # "" for a counterfactual: it names a turn, not a label
    source: str
    items: tuple[Any, ...]  # the suggestions (StoredSuggestion or Suggestion), in the order found
    score: agreement.DetectorScore | None  # the source's precision/recall on this label, when measured
    ticked: bool
    why: str  # why it starts ticked or not, in a few words

    @property
    def count(self) -> int:
        return len(self.items)


def source_scores(suggestions: Sequence[Any], finals: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], Any]:
    """(source, label) -> DetectorScore of that source's suggestions against the adjudicated final labels."""
    by_source: dict[str, dict[str, set[str]]] = {}
    for s in suggestions:
        if s.label:
            by_source.setdefault(s.detector, {}).setdefault(s.run_id, set()).add(s.label)
    out = {}
    for source, suggested in by_source.items():
        labels = sorted({x for ls in suggested.values() for x in ls})
        for score in agreement.detector_scores(suggested, finals, labels):
            out[(source, score.label)] = score
    return out


def group(found: Sequence[Any], scores: Mapping[tuple[str, str], Any], run_correct: bool | None,
          floor: float = PRECISION_FLOOR) -> list[SuggestionGroup]:
    """One group per (label, source) of one run's suggestions, in the order first found. A group starts
    ticked only when its source's precision on the label is measured (against adjudicated labels) and at
    least `floor`; unticked, with the reason, when: it names no label; the precision is not measured yet;
    it is below `floor`; or the debate ended right and the label is not one that can describe a right run
    (mast.ABOUT_RIGHT_RUNS)."""
    keys: dict[tuple[str, str], list[Any]] = {}
    for s in found:
        keys.setdefault((s.label, s.detector), []).append(s)
    out = []
    for (label, source), items in keys.items():
        score = scores.get((source, label))
        precision = None if score is None else score.precision
        if not label:
            ticked, why = False, "names a turn, not a label"
        elif run_correct and label not in ABOUT_RIGHT_RUNS:
            ticked, why = False, "the debate ended right"
        elif precision is None:
            ticked, why = False, UNMEASURED
        elif precision < floor:
            ticked, why = False, f"precision {precision:.0%} is below {floor:.0%}"
        else:
            ticked, why = True, f"precision {precision:.0%}"
        out.append(SuggestionGroup(label, source, tuple(items), score, ticked, why))
    return out


def ticked_labels(groups: Sequence[SuggestionGroup]) -> list[str]:
    return list(dict.fromkeys(g.label for g in groups if g.ticked and g.label))
