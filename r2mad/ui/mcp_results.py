"""MCP tool results that programs can read: Gradio 6's MCP layer writes a tool's dict or list result as a Python
literal (`str(value)`); here such a result is written as JSON text instead, so that an MCP client parses it with
json.loads. Files and images keep Gradio's own handling. Installed once per process by r2mad/ui/api.install."""
from __future__ import annotations

import json
from typing import Any


def install() -> None:
    """Make the MCP layer write dict and list results as JSON (idempotent)."""
    from gradio.mcp import GradioMCPServer
    from gradio_client import utils as client_utils

    if getattr(GradioMCPServer.postprocess_output_data, "_r2mad_json", False):
        return
    original = GradioMCPServer.postprocess_output_data

    def postprocess_output_data(self, data: Any, root_url: str):
        if isinstance(data, list) and data and all(_plain(x) for x in data):
            return [self.types.TextContent(type="text", text=json.dumps(x, ensure_ascii=False)) for x in data]
        return original(self, data, root_url)

    def _plain(value: Any) -> bool:
        return isinstance(value, (dict, list)) and not client_utils.is_file_obj_with_meta(value)

    postprocess_output_data._r2mad_json = True
    GradioMCPServer.postprocess_output_data = postprocess_output_data
