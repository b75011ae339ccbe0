"""MCP tools that programs can read: Gradio 6's MCP layer writes a tool's dict or list result as a Python literal
(`str(value)`) and declares no output schema; here such a result is written as JSON text and also returned as
structured content, each tool listed with its output schema (r2mad/ui/mcp_schemas.py). The debate endpoints report
each finished round through gr.Progress, which reaches an MCP client as a progress notification carrying the
step and the total (Gradio's own counts notifications with no total). Each result and refusal leaves through the
app's scrub. Installed by r2mad/ui/api.install."""
from __future__ import annotations

import asyncio
import functools
import inspect
import json
from typing import Any, Callable

import gradio as gr

from r2mad.types import Transcript
from r2mad.ui.mcp_schemas import OUTPUT_SCHEMAS, structured

PROGRESS_FLUSH_S = 0.05  # a few of the queue's progress intervals (timers on the same event loop fire in order)


def install() -> None:
    """Make the MCP layer write dict and list results as JSON and structured content, list the tools with their
    output schemas and send progress with its total (idempotent)."""
    from gradio.mcp import GradioMCPServer
    from gradio_client import utils as client_utils

    if getattr(GradioMCPServer.postprocess_output_data, "_r2mad_json", False):
        return
    original = GradioMCPServer.postprocess_output_data
    create_server = GradioMCPServer.create_mcp_server

    def postprocess_output_data(self, data: Any, root_url: str):
        if isinstance(data, list) and data and all(_plain(x) for x in data):
            return [self.types.TextContent(type="text", text=json.dumps(x, ensure_ascii=False)) for x in data]
        return original(self, data, root_url)

    def _plain(value: Any) -> bool:
        return isinstance(value, (dict, list)) and not client_utils.is_file_obj_with_meta(value)

    postprocess_output_data._r2mad_json = True
    GradioMCPServer.postprocess_output_data = postprocess_output_data
    GradioMCPServer.create_mcp_server = lambda self: with_schemas(create_server(self))
    GradioMCPServer._execute_tool_with_progress = run_with_progress


def with_schemas(server):
    """The MCP server with each known tool listed with its output schema and answering with structured content."""
    from mcp import types

    handlers = server.request_handlers
    list_tools, call_tool = handlers[types.ListToolsRequest], handlers[types.CallToolRequest]

    async def listed(request):
        result = await list_tools(request)
        for tool in result.root.tools:
            tool.outputSchema = OUTPUT_SCHEMAS.get(tool.name)
        return result

    async def called(request):
        result = await call_tool(request)
        done = result.root
        if request.params.name in OUTPUT_SCHEMAS and not done.isError and done.content:
            done.structuredContent = structured(json.loads(done.content[0].text))
        return result
    handlers[types.ListToolsRequest], handlers[types.CallToolRequest] = listed, called
    return server


def progress_point(update: Any, done: float, total: float | None) -> tuple[float, float | None]:
    """Where a job stands after a status update: the step and total of the newest progress unit that has them,
    else as before (so progress never goes back, while queue and processing notices keep coming)."""
    for unit in update.progress_data or []:
        if unit.index is not None:
            return max(done, unit.index), unit.length if unit.length is not None else total
    return done, total


async def run_with_progress(self, job: Any, progress_token: str | int) -> Any:
    """A queued tool call, each status update sent to the client as progress with its total when known."""
    context = self.mcp_server.request_context
    done, total, output = 0.0, None, None
    async for update in job:
        if update.type == "status":
            done, total = progress_point(update, done, total)
            await context.session.send_progress_notification(
                progress_token=progress_token, progress=done, total=total,
                message=self._format_progress_message(update), related_request_id=str(context.request_id))
        elif update.type == "output" and update.final:
            output = update.outputs
            if not update.success:
                raise RuntimeError(": ".join(str(x) for x in (output.get("title"), output.get("error")) if x)
                                   or "The tool failed.")
    if job.exception():
        raise job.exception()
    return output["data"]


def round_reporter(progress: gr.Progress, rounds: int, scrub: Callable[[str], str]) -> Callable[[Transcript], None]:
    """A transcript watcher that tells the caller each round as it finishes (an MCP client's progress
    notifications, each through `scrub`; `rounds` of the debate at most)."""
    reported = [0]

    def report(t: Transcript) -> None:
        finished = [r for r in t.rounds if not r.details.get("running")]
        if len(finished) > reported[0]:
            reported[0] = len(finished)
            last = finished[-1]
            answers = ", ".join(x.answer.value or "no answer" for x in last.turns)
            desc = scrub(f"round {last.index} finished ({answers})")
            progress((len(finished), max(rounds, len(finished))), desc=desc)
    return report


async def progress_sent() -> None:
    """Let the last round's progress update go out before the result ends the call: Gradio's queue sends the
    newest pending update every 10 ms from this event loop, and a result that comes first drops it."""
    await asyncio.sleep(PROGRESS_FLUSH_S)


def without_progress(fn):
    """`fn` as gr.api should see it: without its gr.Progress parameter, which gr.api would take for an input."""
    signature = inspect.signature(fn)
    if "progress" not in signature.parameters:
        return fn

    @functools.wraps(fn)
    async def endpoint(*args, **kwargs):
        return await fn(*args, **kwargs)
    endpoint.__signature__ = signature.replace(parameters=[p for p in signature.parameters.values()
                                                           if p.name != "progress"])
    endpoint.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != "progress"}
    return endpoint


def leaving(fn, scrub: Callable[[Any], Any]):
    """`fn` as the API and the MCP tools call it: its result and its refusal's sentence pass `scrub` on their way
    out (an upstream may have written a key into a reply); signature, docstring and sync or async kept."""
    def refused(exc: gr.Error) -> gr.Error:
        return gr.Error(scrub(exc.message), print_exception=False)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def endpoint(*args, **kwargs):
            try:
                return scrub(await fn(*args, **kwargs))
            except gr.Error as exc:
                raise refused(exc) from None
        return endpoint

    @functools.wraps(fn)
    def endpoint_sync(*args, **kwargs):  # sync endpoints stay in gradio's worker threads, off the event loop
        try:
            return scrub(fn(*args, **kwargs))
        except gr.Error as exc:
            raise refused(exc) from None
    return endpoint_sync


def tracking_progress(demo: gr.Blocks, api_name: str, fn) -> None:
    """Once registered, the endpoint calls `fn` itself, so Gradio hands it a progress tracker: each update reaches
    the caller (an MCP client's progress notifications)."""
    if "progress" in inspect.signature(fn).parameters:
        [event] = [e for e in demo.fns.values() if e.api_name == api_name]
        event.fn, event.tracks_progress = fn, True
