"""A saved run as programs read it: answers per round, clipped texts, usage per model (the API's and MCP tools'
results, the served model's extra fields). Pure; no Gradio."""
from __future__ import annotations

from typing import Any

from r2mad.types import Transcript

TEXT_LIMIT = 1200  # characters of each agent's response in a compact transcript


def compact(t: Transcript, run_id: str | None = None) -> dict[str, Any]:
    """A transcript as an assistant or a script wants it: answers per round, clipped texts, usage."""
    usage = t.usage()
    return {"run_id": run_id, "method": t.method, "backbone": t.backbone, "status": t.status,
            "question": t.task.question, "options": dict(t.task.options), "gold": t.task.gold,
            "final": t.final.value, "correct": t.correct, "notices": list(t.notices),
            "rounds": [{"round": r.index, "consensus": round(r.consensus, 4),
                        "replayed": bool(r.details.get("replayed") or r.details.get("shared")),
                        "turns": [{"agent": x.agent + 1, "backbone": x.backbone or t.backbone,
                                   "answer": x.answer.value, "how": x.answer.how, "error": x.error,
                                   "text": x.text[:TEXT_LIMIT], "human": bool(x.details.get("human"))}
                                  for x in r.turns],
                        "notes": [{"to": None if c.target is None else c.target + 1, "text": c.text}
                                  for c in r.aux if c.kind == "human"]}
                       for r in t.rounds],
            "usage": {"calls": usage.calls, "tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out},
            "usage_by_model": {name: {"calls": u.calls, "tokens_in": u.tokens_in, "tokens_out": u.tokens_out}
                               for name, u in t.usage_by_model().items()}}
