"""A fork's changes to R²-MAD's memory block: drop-case and replace-case, checked before the fork runs
and applied to one agent's retrieval. The retrieval itself is r2mad.methods.r2mad's."""
from __future__ import annotations

import dataclasses

from r2mad.memory.retrieval import case_reward

CASE_KINDS = ("drop-case", "replace-case")


def check_case_change(change, k: int, bank) -> str | None:
    """Why `change` cannot act on a memory block of at most `k` cases from `bank` (None: it can)."""
    who = f"Agent {change.agent + 1}"
    if change.case_rank > k:
        return (f"{who}'s memory block shows at most {k} case(s) (r2mad.k = {k}), so it has no case at "
                f"rank {change.case_rank}; give a rank between 1 and {k}.")
    if change.kind != "replace-case":
        return None
    case = bank.case(change.case_id) if bank is not None else None
    if case is None:
        return (f"No case '{change.case_id}' in the fork's memory bank; pick a case id from the Bank tab "
                "or search_bank.")
    if case.agent != change.agent:
        return (f"Case '{change.case_id}' belongs to agent {case.agent + 1}'s memory, not agent "
                f"{change.agent + 1}'s; pick a case of agent {change.agent + 1}.")
    return None


def steer_cases(ctx, agent: int, found, bank, reward: str):
    """(retrieval, what changed) after this round's drop-case / replace-case for `agent`: the case shown
    at that rank is left out of its memory block, or another case of `bank` takes its place (unscored:
    no similarity or MMR). The confidence tags stay as computed over the candidate pool."""
    steer = {}
    for change in ctx.steered(*CASE_KINDS):
        if change.agent != agent:
            continue
        cases, picked, rank = list(found.cases), list(found.picked), change.case_rank
        if rank > len(cases):
            ctx.notice(f"Round {ctx.index}: agent {agent + 1} was shown {len(cases)} case(s), none at rank "
                       f"{rank}; the fork's {change.kind} changed nothing.")
            continue
        old = cases[rank - 1]
        if change.kind == "drop-case":
            del cases[rank - 1], picked[rank - 1]
            steer.update({"drop-case": rank, "dropped": old.id})
        else:
            new = bank.case(change.case_id)
            cases[rank - 1] = new
            picked[rank - 1] = (new.id, None, case_reward(new, reward), None)
            steer.update({"replace-case": rank, "replaced": old.id, "by": new.id})
        found = dataclasses.replace(found, cases=tuple(cases), picked=tuple(picked))
    return found, steer
