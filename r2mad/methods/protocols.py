"""Each seed paper's protocol beside `--profile paper`: which methods its tables have rows for (with the
paper's own row labels), which benchmarks its columns hold, how many seeds, and which layout the report
prints. The settings each protocol fixes (agents, rounds) are config.PROTOCOL_SETTINGS."""
from __future__ import annotations

from dataclasses import dataclass

from r2mad.settings.config import PROTOCOL_SETTINGS


@dataclass(frozen=True)
class Protocol:
    name: str  # the --profile value
    paper: str
    rows: tuple[tuple[str, str], ...]  # (method, the paper's row label), in the paper's order
    benchmarks: tuple[str, ...]  # its tables' columns, by our benchmark names
    seeds: int  # sampling seeds per method (the ± of its tables)
    spread: str  # what its ± is: "sd" (sample standard deviation over seeds) or "se" (standard error)
    layout: str  # the report's layout (evaluation/paper_tables.LAYOUTS)
    note: str = ""

    @property
    def settings(self) -> dict:
        return dict(PROTOCOL_SETTINGS[self.name])


PROTOCOLS = {p.name: p for p in (
    Protocol("truemad", "TrueMAD (Bao et al. 2026)",
             (("cot", "Single LLM"), ("sc", "Single LLM (mean of samples)"), ("mad", "MAD"), ("dmad", "DMAD"),
              ("truemad", "TrueMAD"), ("truedmad", "TrueDMAD")),
             ("aime2024", "aime2025", "gpqa-diamond", "truthfulqa"), 3, "sd", "agent-vote",
             "4 agents, rounds R1-R5 (R1 = the independent answers); Agent ACC = mean correctness of the R5 agents, "
             "Vote ACC = strict majority of the R5 agents correct; mean ± sample SD over three seeds. Single LLM: "
             "one answer a question (cot); Single LLM (mean of samples): the mean over Self-Consistency's "
             "--samples answers a question (sc; 4 fits the paper's printed means)."),
    Protocol("du", "Du et al. 2024",
             (("cot", "Single Agent"), ("sc", "Multi-Agent (Majority)"), ("mad", "Multi-Agent (Debate)")),
             ("arithmetic", "gsm8k", "biographies", "mmlu"), 1, "se", "accuracy-se",
             "3 agents, 2 rounds (the answers and one update); accuracy of the majority of the final answers "
             "(ties to the first agent); biographies: the judge's factuality score per agent, no vote; ± is the "
             "standard error over items, as the authors' evaluators print it."),
    Protocol("madm2", "MAD-M² (Tian et al. 2026)",
             (("cot", "CoT"), ("sc", "CoT-SC"), ("mad", "MAD"), ("madm2-subjective", "MAD-M² (S)"),
              ("madm2-objective", "MAD-M² (O)")),
             ("gsm8k", "math", "aime2024", "aime2025", "mmlu-pro-economics", "mmlu-pro-engineering"), 1, "sd",
             "accuracy",
             "3 agents, 3 rounds counting round 0 (as the R²-MAD paper runs MAD-M²); accuracy of the majority vote."),
)}


def protocol_of(profile: str | None) -> Protocol | None:
    return PROTOCOLS.get(profile or "")
