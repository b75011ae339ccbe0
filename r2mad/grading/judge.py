"""The answer judge: a model asked whether an answer says the same as a reference answer to a question, for
the kinds no string rule can score (an open answer against its reference; a short answer the embedder leaves
undecided). Our own prompt; the verdict is read from <label>…</label>. Not part of the loop's vote."""
from __future__ import annotations

import re

from r2mad.backends.base import BackendError, ChatBackend
from r2mad.grading.kinds.reading import strip_think
from r2mad.types import Message, Task

JUDGE_SYSTEM = ("You compare a candidate answer with a reference answer to the same question. You judge only "
                "whether they say the same thing; style, length and extra detail do not matter, but a "
                "different claim, a different choice or a missing key part does.")
_LABEL = re.compile(r"<label>\s*(NOT\s+SURE|YES|NO)\s*</label>", re.I)


def judge_messages(question: str, reference: str, answer: str) -> list[Message]:
    return [Message("system", JUDGE_SYSTEM),
            Message("user", f"Question:\n{question.strip()}\n\nReference answer:\n{reference.strip()}\n\n"
                            f"Candidate answer:\n{answer.strip()}\n\nDoes the candidate answer say the same as the "
                            "reference? Explain in one or two sentences, then give your verdict in tags: "
                            "<label>YES</label>, <label>NO</label> or <label>NOT SURE</label>.")]


def read_verdict(text: str) -> bool | None:
    """The last <label> tag: YES -> True, NO -> False; NOT SURE or no tag -> None (unscored)."""
    found = _LABEL.findall(strip_think(text))
    word = re.sub(r"\s+", " ", found[-1]).upper() if found else "NOT SURE"
    return {"YES": True, "NO": False}.get(word)


async def judged_correct(backend: ChatBackend, task: Task, answer: str | None, *, max_tokens: int = 192,
                         seed: int | None = 0) -> bool | None:
    """Whether `answer` says what the task's reference says, by the judge; None without a reference or an
    answer, when the judge is not sure, or when its call fails."""
    if task.gold is None or answer is None:
        return None
    try:
        [c] = await backend.chat(judge_messages(task.question, task.gold, answer), n=1, temperature=0.0, top_p=1.0,
                                 max_tokens=max_tokens, seed=seed)
    except BackendError:
        return None
    return read_verdict(c.text)
