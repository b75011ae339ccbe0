"""The label book over a RunStore: detector suggestions (stored per run, reviewed by people), human labels
with blame and suggestion reviews, and adjudicated final labels. Not for queues (queues.py) or
statistics (agreement.py)."""
from __future__ import annotations

from typing import Any, Sequence

from r2mad.annotation.detectors import NO_LABEL, VERSION, counterfactual, detect
from r2mad.runs.annotations import FinalLabels
from r2mad.runs.store import RunStore
from r2mad.runs.suggestions import StoredSuggestion

Turn = dict[str, int]  # {"round": r, "agent": a} (0-based agent)
Blame = dict[str, "Turn | list[Turn]"]  # label -> the turn it blames, or a list of turns (several culprits)


def blame_turns(value: Any) -> list[tuple[int, int]]:
    """The (round, agent) pairs a label's blame names, whether stored as one turn or a list of turns."""
    items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
    return sorted({(int(t["round"]), int(t["agent"])) for t in items
                   if isinstance(t, dict) and t.get("round") is not None and t.get("agent") is not None})


def blame_value(turns: Sequence[tuple[int, int]]) -> Turn | list[Turn] | None:
    """How a set of turns is stored: one turn as a plain {"round", "agent"}, several as a list."""
    items = [{"round": r, "agent": a} for r, a in sorted(set(turns))]
    return None if not items else items[0] if len(items) == 1 else items


class LabelBook:
    def __init__(self, store: RunStore):
        self.store = store

    # --- detector suggestions -----------------------------------------------------------------

    def detect(self, run_ids: Sequence[str] | None = None) -> int:
        """Run the detectors on every finished run (or those given) not yet checked by this detector
        version or changed since (the run, or its blame replays: `counterfactual` suggestions); return
        how many runs were (re)checked."""
        todo = [(run_id, stamp) for run_id, stamp in self.store.undetected(VERSION)
                if run_ids is None or run_id in set(run_ids)]
        for run_id, stamp in todo:
            record = self.store.get_run(run_id)
            found = detect(record.transcript) + counterfactual(self.store.blame_of(run_id))
            self.store.replace_detected(run_id, found, VERSION, stamp)
        return len(todo)

    def suggestions(self, run_id: str | None = None) -> list[StoredSuggestion]:
        """Suggestions of one run (or all), each with its reviews, in the order they were found."""
        return self.store.suggestions(run_id)

    # --- human labels -------------------------------------------------------------------------

    def save_labels(self, run_id: str, annotator: str, labels: Sequence[str], note: str = "",
                    blame: Blame | None = None) -> int:
        """Save a person's labels (through the store's checks); every suggestion of the run counts as
        confirmed by them when its label is among theirs, rejected otherwise; a counterfactual one (no
        label) when they blamed one of its turns for some label. The confirmed suggestions of a label the
        person gave no turn for lend it their turns (round, first agent): one, or a set of several."""
        blame = dict(blame or {})
        found = self.suggestions(run_id)
        lent: dict[str, set[tuple[int, int]]] = {}
        for s in found:
            if s.label in labels and s.label not in blame and s.round is not None and s.agents:
                lent.setdefault(s.label, set()).add((s.round, s.agents[0]))
        blame.update({label: blame_value(turns) for label, turns in lent.items()})
        annotation_id = self.store.annotate(run_id, annotator=annotator, labels=labels, note=note, blame=blame)
        turns = [turn for value in blame.values() for turn in blame_turns(value)]

        def confirmed(s: StoredSuggestion) -> bool:
            return any((s.round, a) in turns for a in s.agents) if s.label == NO_LABEL else s.label in labels
        self.store.review_suggestions(annotator.strip(), {s.id: "confirmed" if confirmed(s) else "rejected"
                                                          for s in found})
        return annotation_id

    # --- adjudication -------------------------------------------------------------------------

    def set_final(self, run_id: str, labels: Sequence[str], adjudicator: str, blame: Blame | None = None) -> None:
        """Write the adjudicated label set of a run (replacing an earlier one)."""
        labels = list(dict.fromkeys(labels))
        unknown = [x for x in labels if x not in self.store.taxonomy]
        if unknown:
            raise ValueError(f"Unknown label(s) {', '.join(map(repr, unknown))}; choose from: "
                             f"{', '.join(self.store.taxonomy)}.")
        if not adjudicator.strip():
            raise ValueError("Adjudicator name is empty; enter your name before writing final labels.")
        self.store.set_final_labels(run_id, labels, {k: v for k, v in (blame or {}).items() if k in labels},
                                    adjudicator.strip())

    def finals(self) -> dict[str, FinalLabels]:
        return self.store.final_labels()

    def human_labels(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """run id -> annotator -> labels, for every annotated run."""
        return {run: {who: labels for who, (labels, _) in people.items()}
                for run, people in self.store.labels_by_annotator().items()}

    def human_blame(self) -> dict[str, dict[str, dict[str, list[tuple[int, int]]]]]:
        """run id -> annotator -> label -> the turns they blamed for it, for every annotated run."""
        return {run: {who: {label: blame_turns(value) for label, value in blame.items()}
                      for who, (_, blame) in people.items()}
                for run, people in self.store.labels_by_annotator().items()}
