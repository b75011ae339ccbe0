"""`python -m r2mad serve`: the debates as an OpenAI-compatible model (r2mad/serving/openai_server.py) on a port,
with the app's line, bounds and run store. Beyond loopback it needs an API key (--api-key or R2MAD_SERVE_KEY)."""
from __future__ import annotations

import os

from r2mad.settings.config import ConfigError, env_secrets


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve the debates as an OpenAI-compatible model: the model name picks the "
                                     "debate (mad@smollm2-135m); GET /v1/models lists them")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback; any other needs a key)")
    p.add_argument("--port", type=int, default=8100)
    p.add_argument("--api-key", default=None, help="the key callers send as a Bearer token (default: "
                                                   "$R2MAD_SERVE_KEY); required beyond loopback")
    p.add_argument("--kind", default="math",
                   help="the answer kind of a question that names none (body \"kind\" or ?kind= in the model name) "
                        "and has no 'A) ...' options (default math)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args, config) -> int:
    import uvicorn

    from r2mad.grading.kinds import KIND_NAMES
    from r2mad.runs.exits import scrub_logs
    from r2mad.serving.loopback import is_loopback
    from r2mad.serving.openai_server import KEY_ENV, Served, create_app
    from r2mad.serving.services import Services

    if args.kind not in KIND_NAMES:
        raise ConfigError(f"--kind {args.kind} is not an answer kind; use one of: {', '.join(KIND_NAMES)}.")
    key = (args.api_key or os.environ.get(KEY_ENV) or "").strip() or None
    beyond = not is_loopback(args.host)
    if beyond and key is None:
        raise ConfigError(f"Serving on {args.host} reaches beyond loopback; give an API key with --api-key or "
                          f"{KEY_ENV}, or bind 127.0.0.1.")
    scrub_logs([key] if key else [])  # the environment's keys are scrubbed from the log already (cli.main)
    services = Services(config, secrets=[*env_secrets(config), *([key] if key else [])])
    services.warm(config.app.default_bank)
    app = create_app(Served(services, key=key, key_required=beyond, kind=args.kind))
    print(f"Serving debates as an OpenAI-compatible model at http://{args.host}:{args.port}/v1 "
          f"(GET /v1/models lists {len(config.backbones)} backbones x every method)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
