"""Train/test separation between a memory bank and the questions run with it: a bank that holds any of
them (by id, or by normalised text) is refused before any model call, for an eval's split and for one
debate or fork; for one debate or fork also a bank holding a question that means the same (a light
rewording or a surely translated one: same_meaning). A question that may be one in another language runs without
that question's cases (guarded). Not for opening banks (resources.open_bank) or splitting data."""
from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from typing import Sequence

from r2mad.evaluation import wording
from r2mad.evaluation.datasets import Split
from r2mad.settings.config import ConfigError
from r2mad.text import quoted
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


SAME_MEANING = 0.95  # cosine of the bank's embedder (all-MiniLM-L6-v2) above which two questions ask the same
# thing: a reordered "When you mix blue and yellow paint, what colour do you get" scores 0.976 against the bank's
# question; "… red and yellow paint?" 0.906, and no two questions of the demo banks more than 0.834
REWORDED = 0.80  # a rewording with the same figures (and no one content word swapped for another)
SAME_NUMBERS = 0.55  # two or more figures, all the same: a rewording however far its words are (the furthest
# of 51 hand-made ones scores 0.691; another bank question with the same two numbers 0.363)
TRANSLATED = 0.81  # multilingual-e5-small's cosine from which a question not in English may be a bank question
# translated: 55 of 55 hand-made translations score 0.835-0.960 against their source, each one's nearest; but so do
# questions the bank does not hold, up to 0.889 ("the smallest planet" against "closest to the Sun", in Spanish)
SURELY_TRANSLATED = 0.90  # from here it is one: refused; between the two its cases are withheld (maybe_translated)
_vectors: dict[str, object] = {}  # the bank questions' vectors, by bank, embedder and questions
_vectors_lock = threading.Lock()


def _stem(question: str, kind: str) -> str:
    return _OPTION_LINES.sub("", question) if kind == "mcq" else question


def _bank_vectors(bank, embedder, stems: list[str]):
    key = hashlib.sha256("\n\0".join([str(bank.path), embedder.id, *stems]).encode()).hexdigest()
    with _vectors_lock:
        vectors = _vectors.get(key)
    if vectors is None:
        vectors = embedder.encode(stems)
        with _vectors_lock:
            _vectors[key] = vectors
    return vectors


def _nearest(bank, embedder, stems: list[str], asked: str):
    """The bank's questions (index, similarity), the nearest first."""
    scores = _bank_vectors(bank, embedder, stems) @ embedder.encode([asked])[0]
    return [(int(i), float(scores[i])) for i in scores.argsort()[::-1]]


def same_meaning(bank, task: Task) -> tuple[str, float] | None:
    """(the bank's question, similarity) for one that asks what `task` asks, else None. In English, by the bank's
    embedder and the figures both hold (wording.figures: numbers, number words, ordinals, operators): the same
    figures and a similarity of at least REWORDED (SAME_MEANING where one content word is swapped for an unlike
    one: "red" for "blue"), or two or more figures, all the same, and at least SAME_NUMBERS. Not in English, by the
    multilingual embedder: the nearest bank question, at least SURELY_TRANSLATED, holding every number written in
    digits (a number changed is another question). Two or more numbers in digits, all the same, count as the same
    figures (the bank's "48°" is the 48 of "48 degrees")."""
    stems = sorted({_stem(c.question, c.task_kind) for c in bank.cases()})
    if not stems:
        return None
    asked = _stem(task.question, task.kind)
    if not wording.is_english(asked):
        found = _translated(bank, stems, asked)
        return found[0] if found and found[0][1] >= SURELY_TRANSLATED else None
    mine, my_digits = wording.figures(asked), wording.digits(asked)
    for i, score in _nearest(bank, bank.embedder, stems, asked):
        if score < SAME_NUMBERS:
            return None
        same_digits = sum(my_digits.values()) >= 2 and wording.digits(stems[i]) == my_digits
        if not same_digits and not wording.same_figures(wording.figures(stems[i]), mine):
            continue
        if same_digits or len(set(mine) - wording.UNSAID) >= 2:
            least = SAME_NUMBERS
        else:
            least = SAME_MEANING if wording.one_word_swapped(asked, stems[i]) else REWORDED
        if score >= least:
            return stems[i], score
    return None


def _translated(bank, stems: list[str], asked: str) -> list[tuple[str, float]]:
    """The bank questions (question, similarity) a question not in English may translate, the nearest first: at
    least TRANSLATED by the multilingual embedder, holding every number it writes in digits."""
    from r2mad.backends.multilingual import multilingual_embedder
    mine = wording.digits(asked)
    return [(stems[i], score) for i, score in _nearest(bank, multilingual_embedder(), stems, asked)
            if score >= TRANSLATED and mine <= wording.as_numbers(wording.figures(stems[i]))]


def maybe_translated(bank, task: Task) -> dict[str, frozenset[str]]:
    """The bank's questions (each with its question ids) that `task`, not in English, may be in translation
    (same_meaning refuses it where it surely is one): a debate reads the bank without their cases (guarded)."""
    asked = _stem(task.question, task.kind)
    if wording.is_english(asked):
        return {}
    ids: dict[str, set[str]] = {}
    for c in bank.cases():
        ids.setdefault(_stem(c.question, c.task_kind), set()).add(c.question_id)
    return {stem: frozenset(ids[stem]) for stem, _ in _translated(bank, sorted(ids), asked)}


def guarded(bank, task: Task) -> tuple[object, tuple[str, ...]]:
    """`bank` as a debate of `task` reads it, and what to say: without the cases of the questions `task` may be in
    another language (maybe_translated), so that none of their answers reaches the debaters."""
    found = maybe_translated(bank, task)
    if not found:
        return bank, ()
    from r2mad.memory.withheld import Withheld
    n = len(found)
    return Withheld(bank, frozenset().union(*found.values())), (
        f"Memory: the cases of {n} bank question{'s' * (n > 1)} left out, which this one may be in another "
        "language.",)


def check_question_not_in_bank(bank, task: Task) -> None:
    """Raise ConfigError (one sentence naming the fix) when `bank` holds `task`'s question, whose cases would
    show the debaters its answer; for every entry point that runs one question with a bank (debate, app,
    fork, rerun), naming the bank by its folder's name (a visitor sees it: never the server's path). Eval checks its
    whole split with check_no_leakage, by the same rule."""
    if held_tasks(bank, [task]):
        how = f"question {task.id}" if task.id in held_questions(bank) else "this question's text"
        raise ConfigError(f"Bank {bank.name} holds {how}, so its cases would show the debaters the answer; "
                          "choose a bank built without this question (another split or split seed), or run "
                          "without a bank.")
    found = same_meaning(bank, task)
    if found:
        held, score = found
        raise ConfigError(f"Bank {bank.name} holds a question that means the same as this one ({quoted(held, 60)}, "
                          f"similarity {score:.2f}), so its cases would show the debaters the answer; choose a "
                          "bank built without it, or run without a bank.")


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
    from r2mad.evaluation.catalog import load_split
    from r2mad.evaluation.datasets import DEFAULT_SPLIT_SEED, DataError

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
