"""Train/test separation between a memory bank and the questions run with it: a bank that holds any of
them (by id, or by normalised text) is refused before any model call, for an eval's split and for one
debate or fork. Not for opening banks (resources.open_bank) or splitting data."""
from __future__ import annotations

import re
import unicodedata
from typing import Sequence

from r2mad.evaluation.datasets import Split
from r2mad.settings.config import ConfigError
from r2mad.types import Task

_OPTION_LINES = re.compile(r"(?:\n\([A-Z]\) [^\n]*)+\Z")  # the "(A) text" lines format_task puts under a question


def held_questions(bank) -> frozenset[str]:
    """The question ids a bank holds: those of its cases, and any its manifest lists."""
    return bank.question_ids | frozenset(bank.manifest.get("question_ids") or ())


def normalised_question(text: str) -> str:
    """A question as compared for leaks: Unicode NFKC, case folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def held_tasks(bank, tasks: Sequence[Task]) -> list[Task]:
    """The tasks whose question `bank` holds: by id, or by normalised question text (a question typed in the
    CLI or the app has an id of its own, so only its text can match)."""
    ids = held_questions(bank)
    texts = {normalised_question(_OPTION_LINES.sub("", c.question) if c.task_kind == "mcq" else c.question)
             for c in bank.cases()}
    return [t for t in tasks if t.id in ids or normalised_question(t.question) in texts]


def check_question_not_in_bank(bank, task: Task) -> None:
    """Raise ConfigError (one sentence naming the fix) when `bank` holds `task`'s question, whose cases would
    show the debaters its answer; for every entry point that runs one question with a bank (debate, app,
    fork, rerun). Eval checks its whole split with check_no_leakage, by the same rule."""
    if held_tasks(bank, [task]):
        how = f"question {task.id}" if task.id in held_questions(bank) else "this question's text"
        raise ConfigError(f"Bank {bank.path} holds {how}, so its cases would show the debaters the answer; "
                          "choose a bank built without this question (another split or split seed), or run "
                          "without a bank.")


def check_no_leakage(bank, split: Split) -> list[str]:
    """Raise ConfigError (one sentence) when `bank` holds a question of `split` (held_tasks: by id or by
    normalised text); else the notices to show:
    one line for a bank built before manifests recorded their split, checked by its cases' ids alone."""
    manifest = bank.manifest
    shared = [t.id for t in held_tasks(bank, split.tasks)]
    if shared:
        built = (f"{manifest['dataset']} with split seed {manifest['split_seed']}" if "split_seed" in manifest
                 else f"split {manifest.get('split')!r}")
        if "split_seed" in manifest and manifest["split_seed"] != split.seed:
            fix = (f"build the bank with `build-memory --split-seed {split.seed}` or run eval with "
                   f"`--split-seed {manifest['split_seed']}`")
        elif split.name != "test":
            fix = "evaluate on `--split test`, which a bank built from the train split does not hold"
        else:
            fix = f"build the bank from the train split with `build-memory --split-seed {split.seed}`"
        raise ConfigError(f"Bank {bank.path} (built from {built}) holds {len(shared)} of the {len(split.ids)} "
                          f"{split.dataset} {split.name} questions of split seed {split.seed} (e.g. "
                          f"{shared[0]}), so its cases would leak their answers into the eval; {fix}.")
    if "split_seed" not in manifest:
        return [f"Bank {bank.path} does not record its dataset and split seed (built before banks did); "
                "the question ids of its cases were checked instead, and none is a question of this eval."]
    return []


def bank_record(bank) -> dict:
    """What run.json records about the bank an eval used; None for what its manifest does not say."""
    manifest = bank.manifest
    return {"path": str(bank.path), "dataset": manifest.get("dataset"), "split": manifest.get("split"),
            "split_seed": manifest.get("split_seed"), "backbone": manifest.get("backbone"),
            "embedder": (manifest.get("embedder") or {}).get("id"), "questions": len(held_questions(bank))}


def eval_tasks(bank, data_file=None) -> list[Task]:
    """The questions an eval of `bank` tests: the test split of the dataset (and split seed) its manifest
    records, or the dataset named by its split (`demo-mcq:train`, seed 0). None known: no questions."""
    from r2mad.evaluation.datasets import DEFAULT_SPLIT_SEED, DataError, load_split

    manifest = bank.manifest
    named, sep, _ = str(manifest.get("split") or "").partition(":")
    dataset = manifest.get("dataset") or (named if sep else "")
    if not dataset:
        return []
    seed = manifest.get("split_seed")
    try:
        return list(load_split(dataset, "test", data_file=data_file,
                               seed=DEFAULT_SPLIT_SEED if seed is None else seed).tasks)
    except ValueError as exc:
        if isinstance(exc, DataError) or "Unknown dataset" not in str(exc):
            raise ConfigError(f"Could not read the test split of {dataset}, which an eval of bank {bank.path} "
                              f"tests ({exc}); give the data file with --data so runs on its questions can be "
                              "refused.") from None
        return []
