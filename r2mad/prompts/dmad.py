"""DMAD (Liu et al., ICLR 2025): one reasoning method per agent, in our own words — chain of thought,
step-back prompting, program of thought — so the agents do not share one mental set."""
from __future__ import annotations

# (name, how to reason): agent i takes method i mod 3
REASONING = (
    ("Chain of thought", "Reason through the question one step at a time, writing each step before the next."),
    ("Step-back", "First step back: name the general principle, rule or concept the question rests on and "
                  "state it plainly. Then apply that principle to the question's details."),
    ("Program of thought", "Work it out as a short program: write Python-like code whose variables and "
                           "statements compute the answer, trace what it gives, then state the result."),
)


def reasoning_method(agent: int) -> tuple[str, str]:
    return REASONING[agent % len(REASONING)]


def opening_note(agent: int) -> str:
    name, how = reasoning_method(agent)
    return f"Your reasoning method is {name.lower()}. {how}"


def debate_note(agent: int) -> str:
    name, _ = reasoning_method(agent)
    return (f"The other agents used other reasoning methods. Keep to yours ({name.lower()}) as you check "
            "their answers and revise your own.")
