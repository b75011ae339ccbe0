"""The app's API for programs: token-free `gr.api` endpoints that take and return compact JSON
(run_debate, list_runs, get_run, fork_run, search_bank), which are also MCP tools when the app is
launched with mcp_server=True. The UI's own events are kept out of the public API (undocumented)."""
from __future__ import annotations

import importlib.util
import inspect
from typing import Any

import gradio as gr

from r2mad.backends.base import BackendError
from r2mad.engine.service import RunRequest
from r2mad.methods import METHODS, needs_bank
from r2mad.runs.faults import StoreError
from r2mad.serving.admission import Refused
from r2mad.serving.compact import TEXT_LIMIT, compact
from r2mad.serving.line import visitor_key
from r2mad.serving.sealed import SEALED_WORDS
from r2mad.serving.services import Services
from r2mad.serving.visitor_runs import fork_saved, readable, start_in_line
from r2mad.serving.visitors import Visitor, identify
from r2mad.settings.config import ConfigError, whole_number
from r2mad.text import quoted
from r2mad.ui import mcp_results
from r2mad.ui.asks import DebateAsk, ForkAsk, takes_fields
from r2mad.ui.errors import refusal, sentence
from r2mad.ui.mcp_results import leaving, progress_sent, round_reporter, tracking_progress, without_progress

ENDPOINTS = ("run_debate", "list_runs", "get_run", "fork_run", "search_bank")
ASKS = {"run_debate": DebateAsk, "fork_run": ForkAsk}  # endpoints whose handler takes one ask (ui/asks.py)
USER_ERRORS = (BackendError, ConfigError, ValueError, KeyError, StoreError, Refused)  # Refused: not let in the line
NOT_SAVED = ("This run is not saved yet: the run store's disk is full, so it is kept aside and saved when space "
             "returns; get_run shows it whole then.")


def mcp_available() -> bool:
    """Whether the `mcp` package (gradio's [mcp] extra) is installed, so the app can serve MCP tools."""
    return importlib.util.find_spec("mcp") is not None


def fork_json(spec) -> dict[str, Any]:
    """What a fork changed, with agents counted from 1 as everywhere in the API (the store keeps them from 0)."""
    from dataclasses import asdict

    data = asdict(spec)
    data["changes"] = [{**c, "agent": c["agent"] + 1} for c in data["changes"]]
    return data


def blame_json(b) -> dict[str, Any]:
    """One blame replay, agents counted from 1 (its own and those of the other turns it neutralised)."""
    from dataclasses import asdict

    return {**asdict(b), "agent": b.agent + 1, "also": [[r, a + 1, how] for r, a, how in b.also]}


class Api:
    """The endpoints, over the app's process-wide services (store, banks, shared backends)."""

    def __init__(self, services: Services):
        self.services = services

    def scrub(self, value: Any) -> Any:
        """`value` as it may leave the process: the app's keys and anything shaped like a token redacted."""
        return self.services.store.scrub(value, keys=False)

    def visitor(self, request: gr.Request | None) -> Visitor:
        """Who calls: on a public Space each API session reads and forks only its own runs."""
        return identify(self.services.config, browser_id=None, session=getattr(request, "session_hash", None))

    def line_key(self, request: gr.Request | None) -> str:
        """Who calls, to the line for debates: the API session (each gradio_client Client is one)."""
        return visitor_key(self.visitor(request).owner, None, getattr(request, "session_hash", None))

    def _backbone(self, name: str) -> str:
        name = (name or "").strip() or self.services.config.default_backbone
        self.services.config.backbone(name)  # unknown: one sentence listing the backbones
        return name

    async def run_debate(self, ask: DebateAsk, request: gr.Request = None,
                         progress: gr.Progress = gr.Progress()) -> dict[str, Any]:
        """Run one debate and return its transcript in compact JSON.

        Args:
            question: the question to debate.
            options: multiple-choice options as {"A": "text", "B": "text"}; leave empty for any other question.
            gold: the correct answer (an option letter or a number), to score the debate; may be empty.
            method: one of the debate methods or baselines (mad, madm2-subjective, truemad, r2mad, cot, ...).
            backbone: a configured backbone name; empty for the app's default.
            bank: the name of a memory bank this app lists, for r2mad and icl-cot (e.g. memory/demo-mcq); empty
                for the default.
            agent_backbones: one backbone per agent, ["a", "b", "a"], for a mixed-model debate; empty: `backbone`.
            aux_backbone: with agent_backbones, the backbone of summaries, judges and advice; empty for agent 1's.
            notes: a person in the debate, before a round: [{"round": 1, "text": "…"}] reaches every agent, with
                "to": [2] agent 2 alone, or "seat": 2 makes the text agent 2's turn (agents counted from 1).
            rounds: rounds in all, round 0 included (3 = round 0 + 2 debate rounds); empty for the app's.
            agents: how many agents debate; empty for the app's.
            max_tokens: most tokens each response may have; empty for the app's.
            temperature: sampling temperature (0 to 2); empty for the app's.
            seed: the seed every call's seed derives from; empty for the app's.
            kind: the answer kind (math, mcq, integer, yesno, short, open); empty to guess it from the question.
        """
        from r2mad.grading.tasks import task_from_input
        from r2mad.human import from_rows, scripted

        s = self.services
        try:
            if ask.method not in METHODS:
                raise ConfigError(f"Unknown method {quoted(ask.method)}; choose one of: {', '.join(METHODS)}.")
            name = self._backbone(ask.backbone)
            asked_settings = {"rounds": ask.rounds, "agents": ask.agents, "max_tokens": ask.max_tokens,
                              "temperature": ask.temperature, "seed": ask.seed}  # the Debate tab's Advanced panel
            settings = s.config.settings.replace(**{k: v for k, v in asked_settings.items() if v not in (None, "")})
            task = task_from_input(ask.question, {k.strip().upper(): v for k, v in (ask.options or {}).items()}
                                   or None, ask.gold or None, max_chars=settings.max_question_chars,
                                   kind=(ask.kind or "").strip() or None)
            names = tuple((n or "").strip() for n in ask.agent_backbones or ())
            said = from_rows(ask.notes, settings.agents, settings.rounds)
            aux = ((ask.aux_backbone or "").strip() or names[0]) if names else name
            asked = RunRequest(task, (ask.method,), settings, aux, source="api", agent_backbones=names,
                               owner=self.visitor(request).owner,
                               bank=(ask.bank or s.config.app.default_bank) if needs_bank(ask.method) else None,
                               moderator=scripted(said) if said else None)
            report = round_reporter(progress, settings.rounds, self.scrub)
            runs = await start_in_line(s, asked, self.line_key(request), on_update=lambda _, t: report(t))
            await progress_sent()
            [(run_id, t)] = [(runs.run_ids[m], t) for m, t in runs.transcripts.items()]
        except USER_ERRORS as exc:
            raise refusal(sentence(exc)) from None
        return self._saved_or_said(compact(t, run_id))

    def list_runs(self, limit: int = 20, method: str = "", correct: str = "any",
                  request: gr.Request = None) -> list[dict[str, Any]]:
        """The newest saved runs, one compact row each.

        Args:
            limit: how many runs (1 to 200).
            method: only runs of this method; empty for all.
            correct: "yes", "no" or "any".
        """
        if correct not in ("yes", "no", "any"):
            raise refusal(f"correct is {quoted(correct)}; use yes, no or any.")
        rows = self.services.store.list_runs(method=method or None, correct={"yes": True, "no": False}.get(correct),
                                             owner=self.visitor(request).list_filter,
                                             limit=_whole(limit, "limit", 1, 200))
        return [{"run_id": r.id, "created_at": r.created_at, "status": r.status, "method": r.method,
                 "backbone": r.backbone, "question": r.question[:200], "gold": r.gold, "final": r.final_answer,
                 "correct": r.correct, "rounds": r.rounds, "tokens": r.tokens}
                for r in rows if r.id not in self.services.sealed]  # a blind comparison's, until its vote

    def get_run(self, run_id: str, request: gr.Request = None) -> dict[str, Any]:
        """One saved run: its compact transcript, the run it was forked from, its forks, blame results and
        sampled blame (each counterfactual's change in P(correct) with its 95% interval).

        Args:
            run_id: the id of a saved run (from list_runs or run_debate).
        """
        from dataclasses import asdict

        from r2mad.runs.counterfactuals import samples_of
        from r2mad.steer.links import fork_of

        store = self.services.store
        try:
            record = readable(store, run_id, self.visitor(request))
            if record.id in self.services.sealed:
                raise KeyError(SEALED_WORDS)
            parent, spec = fork_of(store, record.id)
        except KeyError as exc:
            raise refusal(sentence(exc)) from None
        data = compact(record.transcript, record.id) if record.transcript else {"run_id": record.id,
                                                                                "status": record.status}
        data.update(forked_from=parent, fork=spec and fork_json(spec), forks=store.forks_of(record.id),
                    blame=[blame_json(b) for b in store.blame_of(record.id)],
                    blame_samples=[{**asdict(b), "turns": [[r, a + 1, how] for r, a, how in b.turns]}
                                   for b in samples_of(store, record.id)])
        return self._saved_or_said(data)

    def _saved_or_said(self, data: dict[str, Any]) -> dict[str, Any]:
        """A run the full disk did not take says so (NOT_SAVED, saved: false); the store's copy, cut off before its
        end, reads "unsaved", not "running"."""
        if not self.services.store.unsaved([data["run_id"]]):
            return data
        status = "unsaved" if data.get("status") == "running" else data.get("status")
        return {**data, "status": status, "saved": False, "notices": [*data.get("notices", []), NOT_SAVED]}

    async def fork_run(self, ask: ForkAsk, request: gr.Request = None,
                       progress: gr.Progress = gr.Progress()) -> dict[str, Any]:
        """Fork a saved debate: replay its rounds before from_round from the record (no model calls),
        change round from_round-1 (answers, edits, masks) or round from_round's own steps (unmasks,
        drop_cases, replace_cases, drop_advice) as asked, and go on live. The fork is saved, linked to its parent.

        Args:
            run_id: the saved run to fork.
            from_round: the first round that runs live again (1 or more).
            answers: force agents' answers, {"1": "B"} (agents counted from 1).
            edits: replace agents' messages, {"2": "new text"}.
            masks: agents whose response is hidden from their peers, [3].
            method: go on with this debate method; empty keeps the run's.
            backbone: go on with this backbone for every agent; empty keeps the run's.
            unmasks: MAD-M²: agents whose previous response is shown at from_round whatever the masks decide, [1].
            drop_cases: R²-MAD: agent -> rank (from 1) of the retrieved case left out of its prompt, {"1": 1}.
            replace_cases: R²-MAD: agent -> "RANK:CASE_ID", a case of its bank shown at that rank instead.
            drop_advice: advice: target agent -> source agent whose advice to it is not asked for, {"1": 2}.
        """
        from r2mad.steer.fork import ForkSpec, parse_changes

        def pairs(mapping) -> list[str]:
            return [f"{k}={v}" for k, v in (mapping or {}).items()]
        try:
            changes = parse_changes(pairs(ask.edits), pairs(ask.answers), [str(m) for m in ask.masks or ()],
                                    [str(m) for m in ask.unmasks or ()], pairs(ask.drop_cases),
                                    pairs(ask.replace_cases), pairs(ask.drop_advice))
            spec = ForkSpec(whole_number(ask.from_round, "from_round", 1, 100), changes, ask.method or None,
                            ask.backbone or None)
            report = round_reporter(progress, spec.rounds or self.services.config.settings.rounds, self.scrub)
            parent_id, fork_id, t = await fork_saved(self.services, ask.run_id, spec, source="api-fork",
                                                     visitor=self.visitor(request), line_key=self.line_key(request),
                                                     record=report)
            await progress_sent()
        except USER_ERRORS as exc:
            raise refusal(sentence(exc)) from None
        return self._saved_or_said({**compact(t, fork_id), "forked_from": parent_id, "fork": fork_json(spec)})

    def search_bank(self, query: str = "", bank: str = "", agent: int = 0, correct: str = "any",
                    limit: int = 10) -> list[dict[str, Any]]:
        """Cases of an R²-MAD memory bank whose text contains the query.

        Args:
            query: text to look for in the cases (question, responses, summary); empty for any case.
            bank: the name of a bank this app lists (e.g. memory/demo-mcq); empty for the app's default bank.
            agent: only this agent's cases (counted from 1); 0 for every agent.
            correct: "yes" or "no" for cases where that agent was right or wrong; "any" for both.
            limit: how many cases (1 to 100).
        """
        s = self.services
        try:
            folder = s.listed_bank(bank or s.config.app.default_bank or "")
        except ConfigError as exc:
            raise refusal(str(exc)) from None
        if correct not in ("yes", "no", "any"):
            raise refusal(f"correct is {quoted(correct)}; use yes, no or any.")
        try:
            agent = _whole(agent, "agent", 0, 100)
            cases = s.bank(folder).search(query or None, agent=agent - 1 if agent > 0 else None,
                                          correct={"yes": True, "no": False}.get(correct),
                                          limit=_whole(limit, "limit", 1, 100))
        except (ValueError, OSError) as exc:
            raise refusal(sentence(exc)) from None
        return [{"case_id": c.id, "agent": c.agent + 1, "round": c.round, "question": c.question[:500],
                 "answer": c.answers[c.agent], "gold": c.gold, "correct": c.own_correct, "reward": c.reward,
                 "summary": c.summary, "response": c.responses[c.agent][:TEXT_LIMIT]} for c in cases]


def _whole(value: Any, name: str, lo: int, hi: int) -> int:
    """An API call's whole-number argument within lo..hi, or a gr.Error sentence saying what is allowed."""
    try:
        return whole_number(value, name, lo, hi)
    except ConfigError as exc:
        raise refusal(str(exc)) from None


def _base(name: str) -> str:
    """An event name without gradio's uniqueness suffix ("list_runs_1" -> "list_runs")."""
    head, _, tail = name.rpartition("_")
    return head if tail.isdigit() and head else name


def _unique(name: str, taken: set) -> str:
    n, candidate = 0, name
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    return candidate


def install(demo: gr.Blocks, services: Services) -> Api:
    """Call last inside `with gr.Blocks() as demo:`: the UI's events wired so far become undocumented
    (still reachable by the app's own page, gone from the API page and the MCP tools; one that took an
    endpoint's name by default, after its handler, is renamed ui_<name>), then the public endpoints are added."""
    taken = {fn.api_name for fn in demo.fns.values()}
    for fn in demo.fns.values():
        if fn.api_visibility == "public":
            fn.api_visibility = "undocumented"
        if isinstance(fn.api_name, str) and fn.api_name.split("_")[0] != "ui" and _base(fn.api_name) in ENDPOINTS:
            fn.api_name = _unique(f"ui_{fn.api_name}", taken)  # a handler named like an endpoint (default names)
            taken.add(fn.api_name)
    api = Api(services)
    mcp_results.install()  # MCP results as JSON text
    for name in ENDPOINTS:
        slow = name in ("run_debate", "fork_run")
        # the app's own line (services.admission) holds debates back; the framework gives each a worker
        handler = getattr(api, name)
        fn = leaving(takes_fields(ASKS[name])(handler) if name in ASKS else handler, api.scrub)
        gr.api(without_progress(fn), api_name=name, concurrency_id="debate" if slow else None,
               concurrency_limit=services.admission.capacity if slow else None)
        tracking_progress(demo, name, fn)
        document(demo, name, fn)
    return api


def document(demo: gr.Blocks, api_name: str, fn) -> None:
    """The API page names each parameter and says what it is (from the docstring's Args) after Gradio's fixed
    "The input value that is provided in the "question" Api component.", which its page always writes."""
    from gradio.utils import get_function_description

    _, described, _ = get_function_description(fn)
    [event] = [e for e in demo.fns.values() if e.api_name == api_name]
    params = [p for p in inspect.signature(fn).parameters if p not in ("request", "progress")]
    for component, param in zip(event.inputs, params):
        component.label = param
        text = described.get(param, "").strip()  # the page puts it after its own fixed sentence
        text = text[:1].upper() + text[1:] + ("" if text.endswith(".") or not text else ".")
        component._api_info = {**component.api_info(), "additional_description": text}
