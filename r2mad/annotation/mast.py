"""The MAST taxonomy of multi-agent failures (Cemri et al. 2025, "Why do multi-agent LLM systems
fail?": 14 modes in 3 categories, their names) and the closest MAST mode of each of our labels, for the
dataset export and its card. Data only; a label with no close mode maps to None."""
from __future__ import annotations

CATEGORIES = {"FC1": "Specification issues", "FC2": "Inter-agent misalignment", "FC3": "Task verification"}
MODES = {
    "FM-1.1": "Disobey task specification", "FM-1.2": "Disobey role specification",
    "FM-1.3": "Step repetition", "FM-1.4": "Loss of conversation history",
    "FM-1.5": "Unaware of termination conditions",
    "FM-2.1": "Conversation reset", "FM-2.2": "Fail to ask for clarification", "FM-2.3": "Task derailment",
    "FM-2.4": "Information withholding", "FM-2.5": "Ignored other agent's input",
    "FM-2.6": "Reasoning-action mismatch",
    "FM-3.1": "Premature termination", "FM-3.2": "No or incomplete verification",
    "FM-3.3": "Incorrect verification",
}
CLOSEST = {  # our label -> the MAST mode nearest to it (a judgement call; see docs/annotation.md)
    "majority_persuaded_correct_agent": "FM-3.3",  # a right agent accepted wrong peers' answer as checked
    "misleading_retrieved_case": "FM-3.2",  # a recalled case's answer taken without checking it
    "wrong_confidence": "FM-3.3",  # the confidence tag is a verification that judged wrongly
    "mask_removed_correct_answer": "FM-2.4",  # the right response was kept from the peers
    "advice_misled": "FM-3.3",  # a rebuttal judged a right answer wrong
    "parse_failure": "FM-1.1",  # the answer was not given in the required format
    "backend_error": None,  # infrastructure, outside MAST
    "shared_misconception_unrecovered": "FM-3.2",  # nobody verified the shared wrong answer
    "other": None,
    "oscillation": "FM-1.3",  # going back over an answer already left
    "stalled_split": "FM-2.5",  # each side ignored the other's arguments
    "answer_changed_no_new_argument": "FM-2.6",  # the reasoning says one thing, the answer another
    "correct_answer_outvoted": "FM-3.2",  # the vote counted answers instead of verifying them
    "premature_consensus_stop": "FM-3.1",
    "judge_endorsed_wrong_answer": "FM-3.3",
    "problem_drift": "FM-2.3",
}
# labels that describe something a debate can do and still end right: pre-ticked on right runs too
ABOUT_RIGHT_RUNS = frozenset({"parse_failure", "backend_error", "oscillation", "answer_changed_no_new_argument"})


def category(code: str) -> str:
    return CATEGORIES["FC" + code[3]]


def mast_name(label: str) -> str | None:
    """'FM-2.4 Information withholding (Inter-agent misalignment)', or None when no mode is close."""
    code = CLOSEST.get(label)
    return None if code is None else f"{code} {MODES[code]} ({category(code)})"
