"""Personas, the task prompt and the answer-format instructions shared by every method."""
from __future__ import annotations

from r2mad.grading.kinds import kind_of
from r2mad.grading.tasks import format_task
from r2mad.prompts.personas import GENERIC, personas_for
from r2mad.types import Task

PERSONAS = GENERIC  # the generic personas per task kind (a typed question's, in either profile)
STEP_BY_STEP = "Solve the problem step by step."


def persona(kind: str, agent: int, n_agents: int, source: str = "") -> tuple[str, str]:
    """(name, system prompt) for agent `agent`: the benchmark's personas where it has some. A single agent
    (CoT, ICL-CoT, Self-Consistency) gets the first debater's persona plus "solve step by step"."""
    names = personas_for(kind, source)
    if n_agents == 1:
        name, text = names[0]
        return name, f"{text} {STEP_BY_STEP}"
    name, text = names[agent % len(names)]
    if agent >= len(names):
        name = f"{name} {agent // len(names) + 1}"
    return name, text


def paper_system(system: str, task: Task) -> str:
    """The paper profile's system prompt: the persona, then the answer format (as the authors' code)."""
    return f"{system}\n\n{format_instruction(task)}"


def format_instruction(task: Task) -> str:
    """How the agent should end its reply: the task's answer kind says (grading.kinds)."""
    return kind_of(task).instruction(task)


def task_prompt(task: Task) -> str:
    return f"{format_task(task)}\n\n{format_instruction(task)}"


def clip(text: str, limit: int = 1500) -> str:
    """Shorten a long response shown to another agent, keeping its end where the answer sits."""
    text = text.strip()
    return text if len(text) <= limit else "[…] " + text[-limit:]


CHARS_PER_TOKEN = 4  # a rough count for budgets; no tokenizer is at hand for every backbone


def clip_tokens(text: str, budget_tokens: int) -> str:
    """Keep a text whole when it fits about `budget_tokens`; otherwise its start and its end (where the
    answer sits), marked where the middle was cut."""
    text, limit = text.strip(), budget_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]} […] {text[-(limit - head):]}"


def fit_to_window(peers: list[tuple[str, str]], room_tokens: int, used_chars: int,
                  floor: int = 400) -> tuple[list[tuple[str, str]], int, list[str]]:
    """(peers, share, labels clipped): whole when they fit the room left in the window (tokens, less the
    characters already used); else each clipped to an equal share of characters (at least `floor`)."""
    room = room_tokens * CHARS_PER_TOKEN - used_chars
    if not peers or sum(len(text) for _, text in peers) <= room:
        return peers, 0, []
    share = max(floor, room // len(peers))
    clipped = [label for label, text in peers if len(text.strip()) > share]
    return [(label, clip(text, share)) for label, text in peers], share, clipped


def final_answer_request(task: Task) -> str:
    """The answer guard's follow-up: the answer alone, in the task's own form."""
    return kind_of(task).final_request(task)
