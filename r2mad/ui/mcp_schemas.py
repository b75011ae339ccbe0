"""The JSON Schemas of the MCP tools' structured results (MCP's outputSchema), one per endpoint of r2mad/ui/api.py;
a client validates each result against its tool's schema. A list result is structured as {"result": [...]} (MCP
asks for an object; Gradio's own structured output uses the same key)."""
from __future__ import annotations

from typing import Any

NUMBER, TEXT, FLAG = {"type": "number"}, {"type": "string"}, {"type": "boolean"}
INTEGER = {"type": "integer"}


def maybe(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def record(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """An object with these keys (those in `required` always present), others allowed."""
    return {"type": "object", "properties": {**required, **optional}, "required": list(required)}


def listed(row: dict[str, Any]) -> dict[str, Any]:
    return record({"result": {"type": "array", "items": row}})


USAGE = record({"calls": INTEGER, "tokens_in": INTEGER, "tokens_out": INTEGER})
TURN = record({"agent": INTEGER, "backbone": TEXT, "answer": maybe(TEXT), "text": TEXT},
              how=maybe(TEXT), error=maybe(TEXT), human=FLAG)
ROUND = record({"round": INTEGER, "consensus": NUMBER, "turns": {"type": "array", "items": TURN}},
               replayed=FLAG, notes={"type": "array"})
TRANSCRIPT = record({"run_id": maybe(TEXT), "method": TEXT, "backbone": TEXT, "status": TEXT, "question": TEXT,
                     "final": maybe(TEXT), "correct": maybe(FLAG), "rounds": {"type": "array", "items": ROUND},
                     "usage": USAGE},
                    options={"type": "object"}, gold=maybe(TEXT), notices={"type": "array", "items": TEXT},
                    usage_by_model={"type": "object", "additionalProperties": USAGE})
SAVED_RUN = record({"run_id": TEXT, "status": TEXT}, forked_from=maybe(TEXT), fork=maybe({"type": "object"}),
                   forks={"type": "array"}, blame={"type": "array"}, blame_samples={"type": "array"})
RUN_ROW = record({"run_id": TEXT, "status": TEXT, "method": TEXT, "backbone": TEXT, "question": TEXT,
                  "final": maybe(TEXT), "correct": maybe(FLAG)},
                 created_at=NUMBER, gold=maybe(TEXT), rounds=INTEGER, tokens=INTEGER)
CASE_ROW = record({"case_id": TEXT, "agent": INTEGER, "round": INTEGER, "question": TEXT, "answer": maybe(TEXT)},
                  gold=maybe(TEXT), correct=maybe(FLAG), reward=maybe(NUMBER), summary=maybe(TEXT),
                  response=TEXT)

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "run_debate": TRANSCRIPT,
    "get_run": SAVED_RUN,
    "fork_run": {**TRANSCRIPT, "properties": {**TRANSCRIPT["properties"], "forked_from": TEXT,
                                              "fork": {"type": "object"}},
                 "required": [*TRANSCRIPT["required"], "forked_from", "fork"]},
    "list_runs": listed(RUN_ROW),
    "search_bank": listed(CASE_ROW),
}


def structured(value: Any) -> dict[str, Any]:
    """A tool's result as MCP structured content: an object as it is, anything else under "result"."""
    return value if isinstance(value, dict) else {"result": value}
