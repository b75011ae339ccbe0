"""Train/test separation between a memory bank and the questions an eval runs: a bank that holds any
of them is refused before any model call. Not for opening banks (runner.open_bank) or splitting data."""
from __future__ import annotations

from r2mad.config import ConfigError
from r2mad.evaluation.datasets import Split


def held_questions(bank) -> frozenset[str]:
    """The question ids a bank holds: those of its cases, and any its manifest lists."""
    return bank.question_ids | frozenset(bank.manifest.get("question_ids") or ())


def check_no_leakage(bank, split: Split) -> list[str]:
    """Raise ConfigError (one sentence) when `bank` holds a question of `split`; else the notices to show:
    one line for a bank built before manifests recorded their split, checked by its cases' ids alone."""
    manifest = bank.manifest
    shared = [qid for qid in split.ids if qid in held_questions(bank)]
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
            "questions": len(held_questions(bank))}
