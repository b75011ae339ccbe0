"""Entry point of the browser app: load the config, build the Gradio UI from r2mad.ui, queue and launch.
`python app.py [--config-dir DIR]` serves on 127.0.0.1:7860 unless GRADIO_SERVER_NAME / GRADIO_SERVER_PORT say
otherwise; the config folder is DIR, else R2MAD_CONFIG_DIR, else configs/."""
from __future__ import annotations

import argparse
import os

from r2mad.runs.exits import scrub_logs
from r2mad.serving import own_eval
from r2mad.serving.loopback import is_loopback
from r2mad.serving.openai_server import KEY_ENV, Served, mount
from r2mad.settings.config import ConfigError, config_folder, env_secrets, load_config
from r2mad.ui import build_app
from r2mad.ui.api import mcp_available
from r2mad.ui.serving import launch


def serve(config, *, port: int | None = None, block: bool = True, warm: bool = True):
    """Build, queue and launch the app with the production settings; returns the running Blocks.
    `warm` opens the default memory bank and loads the default (embedded) model in the background, so the first
    visitor finds them ready."""
    scrub_logs(env_secrets(config))  # the log is a way out too: no key, no token in it
    demo = build_app(config, secrets=env_secrets(config))
    if warm:
        demo.r2mad_services.warm(config.app.default_bank)
        demo.r2mad_services.warm_model(config.default_backbone)
    if config.app.persist_repo:  # no persistent disk: runs live in a private dataset repo as well
        from r2mad.runs.backup import start_backup
        demo.r2mad_backup = start_backup(demo.r2mad_services.store, config.app.persist_repo,
                                         every_min=config.app.persist_every_min, token=os.environ.get("HF_TOKEN"))
    # Debate events carry their own limit (the line's capacity): the app's line (services.admission) holds
    # them back and tells each visitor their place, so none waits unseen in Gradio's queue.
    demo.queue(default_concurrency_limit=config.app.concurrency_limit, max_size=config.app.max_queue)
    # No allowed_paths: memory/ and configs/ are never served as files. No run history: Gradio would
    # keep every call's inputs (a pasted token among them) in the visitor's browser storage. An upload over
    # the Your data tab's limit is refused by Gradio's upload route (413) before it fills the disk.
    launch(demo, server_name=config.app.host, server_port=port or config.app.port, run_history=False,
           show_error=not config.on_space, prevent_thread_lock=True, quiet=not block,
           max_file_size=own_eval.MAX_UPLOAD_BYTES,
           mcp_server=mcp_available() and not config.private_runs)  # the gr.api endpoints as MCP tools
    # (off where runs are private per visitor: gradio's MCP layer sends every tool call through one session)
    mount_openai(demo, config, os.environ.get(KEY_ENV))
    if block:
        demo.block_thread()
    return demo


def mount_openai(demo, config, key: str | None) -> None:
    """/v1: the debates as an OpenAI-compatible model on the app's own server (docs/harnesses.md); beyond loopback
    (a Space) it answers only callers that send R2MAD_SERVE_KEY."""
    served = Served(demo.r2mad_services, key=key, key_required=not is_loopback(config.app.host))
    mount(demo.app, served, "/v1")


def load_app_config(argv: list[str] | None = None, env: dict[str, str] | None = None):
    """The config `python app.py` serves: from --config-dir, else R2MAD_CONFIG_DIR, else configs/."""
    parser = argparse.ArgumentParser(prog="python app.py", description="The R²-MAD Studio app.")
    parser.add_argument("--config-dir", default=None, help="folder with backbones.yaml, methods.yaml, app.yaml "
                        "(default: R2MAD_CONFIG_DIR, else configs/)")
    args = parser.parse_args(argv)
    return load_config(config_folder(args.config_dir, env), env)


if __name__ == "__main__":
    try:
        config = load_app_config()
    except ConfigError as exc:
        raise SystemExit(f"error: {exc}") from None
    serve(config)
