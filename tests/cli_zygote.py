"""Runs `python -m r2mad ARGS` for tests/project/test_docs.py without paying the CLI's imports (about a second a
command, most of it the openai package) each time: `serve(SOCKET)` imports the CLI once and forks a child
per command, which runs `r2mad.cli.main(ARGS)` on the caller's own stdin, stdout and stderr, in its folder and
environment; `CLIENT` (run by a plain `python -S`) sends one command and exits with the command's status.
Test use only."""
from __future__ import annotations

import json
import os
import socket
import sys

CLIENT = """import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(os.environ["R2MAD_CLI_SOCKET"])
request = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}
socket.send_fds(s, [json.dumps(request).encode()], [0, 1, 2])
sys.exit(int(s.recv(16) or b"1"))
"""


def run_one(conn: socket.socket, main) -> None:
    message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    request = json.loads(message)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: the caller's streams and folder, then the command
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        try:
            code = main(request["argv"])
        except SystemExit as exc:  # argparse's --help and refusals
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001  (a traceback, then a failed status, as python would)
            import traceback

            traceback.print_exception(exc)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        conn.sendall(str(code or 0).encode())
        os._exit(0)
    for fd in fds:
        os.close(fd)
    os.waitpid(pid, 0)
    conn.close()


# what the commands import on first use (the openai client, methods, forks, reports, datasets): once, too
WARM = ("r2mad.backends.openai_compat", "r2mad.methods.mad", "r2mad.methods.madm2", "r2mad.methods.truemad",
        "r2mad.methods.r2mad", "r2mad.methods.single", "r2mad.steer.fork", "r2mad.steer.blame",
        "r2mad.evaluation.rows", "r2mad.evaluation.report", "r2mad.exports.dataset", "pyarrow.parquet")


def serve(path: str) -> None:
    import importlib

    from r2mad.cli import main  # the heavy imports, once

    for name in WARM:
        importlib.import_module(name)

    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    server.listen()
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        run_one(conn, main)


if __name__ == "__main__":
    serve(sys.argv[1])
