"""`python -m r2mad bench --kinds`: what comparing answers costs beside a debate on the embedded model (the rules
of the short and open kinds, and the embedding that keeps short answers in different words undecided; target
<= 5 % of the debate's wall), and that the embedder is loaded once per process however many debates compare
answers."""
from __future__ import annotations

import asyncio
import time
from contextlib import contextmanager

from r2mad.grading.kinds import KINDS
from r2mad.grading.kinds.meaning import MEANING
from r2mad.settings.config import DebateSettings
from r2mad.types import Task

QUESTIONS = (Task("short", "What is the capital of Australia?", id="bench-short"),
             Task("open", "Should I learn Rust or Go first?", id="bench-open"))


@contextmanager
def timed_meaning(kind):
    """Seconds spent in the kind's off-loop embedding (settle) and its comparisons (rule), summed."""
    spent = [0.0]
    originals = {name: getattr(kind, name) for name in ("settle", "rule")}

    def timing(fn):
        def run(*args):
            started = time.perf_counter()
            try:
                return fn(*args)
            finally:
                spent[0] += time.perf_counter() - started
        return run

    for name, fn in originals.items():
        setattr(kind, name, timing(fn))
    try:
        yield spent
    finally:
        for name in originals:
            delattr(kind, name)  # back to the class's own methods


def kind_figures(**overrides) -> list[tuple[str, str]]:
    from r2mad.backends import embedder
    from r2mad.backends.embedded import EmbeddedBackend
    from r2mad.debate import Debate
    from r2mad.methods import PLAIN, make_method

    loads, load = [0], embedder._load

    def counted(model_id):
        loads[0] += 1
        return load(model_id)

    embedder._load, rows = counted, []
    try:
        started = time.perf_counter()
        MEANING.embed(["a first answer, to load the embedder"])
        rows.append(("embedder load, once per process (s)", f"{time.perf_counter() - started:.2f}"))
        backend = EmbeddedBackend()
        settings = DebateSettings(seed=0, early_stop=False).replace(**overrides)
        for task in QUESTIONS:  # each debate embeds its own answers; the embedder stays loaded
            with timed_meaning(KINDS[task.kind]) as spent:
                t = asyncio.run(Debate(backend, make_method(PLAIN, settings)).run(task))
            answers = sum(turn.answer.parsed for r in t.rounds for turn in r.turns)
            rows.append((f"{task.kind} ({answers} answers read): comparing answers (ms) / debate wall (s)",
                         f"{1000 * spent[0]:.3f} / {t.seconds:.1f} ({spent[0] / max(t.seconds, 1e-9):.2%})"))
        rows.append(("embedder loads in this process (target 1)", str(loads[0])))
    finally:
        embedder._load = load
    return rows

