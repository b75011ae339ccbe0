"""The About panel's text: what each method does, the papers, and what the embedded model is for; the
list of methods comes from the registry."""
from r2mad.methods import REGISTRY

ABOUT = """
## About R²-MAD Studio

Several copies of a language model ("agents") answer a question, read each other's answers and revise
over a few rounds; the final answer is a plurality vote of the last round. Round 0 is each agent alone;
"Rounds in all" counts round 0, so 3 rounds = round 0 + 2 debate rounds, as in the papers.

**MAD** — Du et al. (2024), *Improving Factuality and Reasoning in Language Models through Multiagent
Debate*. Each agent keeps its own history and, in every debate round, reads the other agents' previous
answers as extra information before giving an updated answer.

**MAD-M²** — Tian et al. (2026). Between rounds every previous answer is evaluated and unreliable ones
are masked before the agents see them: *subjective* masks ask the model to judge each answer
(YES / NO / NOT SURE), *objective* masks keep the answers with the lowest perplexity of their own tokens.

**TrueMAD** — Bao et al. (2026). Before revising, each agent writes one-to-one advice to another agent
(support, rebuttal, refinement or a question), and the target decides how to use it. No official code
exists: **the TrueMAD here is our re-implementation** from the paper's description.

**R²-MAD** — Jin et al. (2026), arXiv [2609.03619](https://arxiv.org/abs/2609.03619). Each agent
retrieves cases of past debates from an experience memory, chosen by a debate-state-aware MMR whose
trade-off λ = 1 − γ·consensus favours relevant successful cases when agents disagree and diverse ones
when they agree; the cases also give each peer a confidence annotation (high or low).

**Baselines** — CoT: one agent reasons step by step. Self-Consistency: several samples of one agent,
majority vote. ICL-CoT: one agent with K cases from the memory bank as in-context examples.

**The default backbone is SmolLM2-135M running on this machine's CPU.** It is a tiny model for trying
the app — watching the rounds, masks, advice and retrieved cases — not for accuracy; use a larger
backbone (Hugging Face Inference Providers with a token, or your own vLLM server) for real results.

Model answers and questions are shown as plain text. A token you paste is used for your own session
only: it is not shown, logged or saved with the runs.
"""


def about_text() -> str:
    rows = [f"| `{name}` | {spec.title} | {spec.paper} | {f'`{spec.section}:`' if spec.section else '—'} |"
            for name, spec in REGISTRY.items()]
    return (ABOUT + "\n### Every method here\n| name | what it does | paper | its settings in methods.yaml |\n"
            "| --- | --- | --- | --- |\n" + "\n".join(rows))
