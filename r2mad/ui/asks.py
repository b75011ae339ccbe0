"""What a program sends the two debate endpoints, as one value each: `DebateAsk` for /run_debate and `ForkAsk`
for /fork_run. Gradio, gradio_client and the MCP tools read an endpoint's parameters from its signature, so
`takes_fields` gives the endpoint one keyword per field (names, types, defaults and order, the public API as
before) while the handler itself takes the whole ask."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from dataclasses import dataclass

from r2mad.methods import PLAIN


@dataclass(frozen=True)
class DebateAsk:
    """One debate, as /run_debate's parameters name it (described in Api.run_debate's docstring)."""
    question: str
    options: dict[str, str] | None = None
    gold: str = ""
    method: str = PLAIN
    backbone: str = ""
    bank: str = ""
    agent_backbones: list[str] | None = None
    aux_backbone: str = ""
    kind: str = ""
    notes: list[dict] | None = None
    rounds: int | None = None
    agents: int | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None


@dataclass(frozen=True)
class ForkAsk:
    """One fork of a saved run, as /fork_run's parameters name it (described in Api.fork_run's docstring)."""
    run_id: str
    from_round: int
    answers: dict[str, str] | None = None
    edits: dict[str, str] | None = None
    masks: list[int] | None = None
    method: str = ""
    backbone: str = ""
    unmasks: list[int] | None = None
    drop_cases: dict[str, int] | None = None
    replace_cases: dict[str, str] | None = None
    drop_advice: dict[str, int] | None = None


def takes_fields(ask_type: type):
    """Wrap `handler(ask, …)` (a bound method) as an endpoint: it takes each field of `ask_type` as a parameter,
    in order and by keyword, then the handler's other parameters (the request and progress Gradio fills), and
    calls the handler with the fields gathered into one `ask_type`."""
    hints = typing.get_type_hints(ask_type)
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    fields = [inspect.Parameter(f.name, keyword, annotation=hints[f.name],
                                default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
              for f in dataclasses.fields(ask_type)]

    def decorate(handler):
        own = inspect.signature(handler).parameters
        rest = [p for name, p in own.items() if name != "ask"]
        given = {name: hint for name, hint in typing.get_type_hints(handler).items() if name != "ask"}
        signature = inspect.Signature([*fields, *rest], return_annotation=given["return"])

        @functools.wraps(handler)
        async def endpoint(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)
            ask = ask_type(**{f.name: values.pop(f.name) for f in fields})
            return await handler(ask, **values)
        endpoint.__signature__ = signature
        endpoint.__annotations__ = {**{p.name: p.annotation for p in fields}, **given}
        return endpoint
    return decorate
