"""A local stand-in for the few Hugging Face Hub HTTP endpoints that a dataset push and pull use:
create a repo, validate the card's YAML, preupload (every file "regular"), commit (NDJSON, base64
files), repo info, file tree and file download. It keeps the files in memory and records each
request, so tests run with no network."""
from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

SHA = "0" * 39 + "1"


class HubStandIn:
    def __init__(self):
        self.repos: dict[str, dict[str, bytes]] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # method, path, Authorization
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, body=b"", headers=None, head=False):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(code)
                for k, v in {"Content-Type": "application/json", "Content-Length": str(len(data)),
                             **(headers or {})}.items():
                    self.send_header(k, v)
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            def _body(self):
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_POST(self):
                hub.requests.append(("POST", self.path, self.headers.get("Authorization")))
                body = self._body()
                if self.path == "/api/repos/create":
                    spec = json.loads(body)
                    name = f"{spec.get('organization') or 'me'}/{spec['name']}"
                    hub.repos.setdefault(name, {})
                    return self._send(200, {"url": f"{hub.url}/datasets/{name}", "name": name})
                if self.path == "/api/validate-yaml":  # the card's front matter must be YAML mapping
                    text = json.loads(body)["content"]
                    front = text.split("---")[1] if text.startswith("---") else ""
                    try:
                        ok = isinstance(yaml.safe_load(front), dict)
                    except yaml.YAMLError:
                        ok = False
                    return self._send(200 if ok else 400, {"warnings": []} if ok else {"error": "Invalid YAML"})
                m = re.match(r"/api/datasets/(.+?)/(preupload|commit)/([^/?]+)", self.path)
                if not m or m.group(1) not in hub.repos:
                    return self._send(404, {"error": "Repository not found"})
                if m.group(2) == "preupload":
                    files = json.loads(body)["files"]
                    return self._send(200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                                       "shouldIgnore": False} for f in files]})
                for line in body.decode().splitlines():
                    item = json.loads(line)
                    if item["key"] == "file":
                        hub.repos[m.group(1)][item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                return self._send(200, {"commitUrl": f"{hub.url}/datasets/{m.group(1)}/commit/{SHA}",
                                        "commitOid": SHA})

            def _get(self, head: bool):
                hub.requests.append(("HEAD" if head else "GET", self.path, self.headers.get("Authorization")))
                m = re.match(r"/api/datasets/(.+?)/revision/([^/?]+)", self.path)
                if m and m.group(1) in hub.repos:
                    files = hub.repos[m.group(1)]
                    return self._send(200, {"id": m.group(1), "sha": SHA, "private": False,
                                            "siblings": [{"rfilename": n, "size": len(b)} for n, b in files.items()]},
                                      head=head)
                m = re.match(r"/api/datasets/(.+?)/tree/([^/?]+)", self.path)
                if m and m.group(1) in hub.repos:
                    return self._send(200, [{"type": "file", "path": n, "size": len(b),
                                             "oid": hashlib.sha1(b).hexdigest()}
                                            for n, b in hub.repos[m.group(1)].items()], head=head)
                m = re.match(r"/datasets/(.+?)/resolve/([^/]+)/(.+)", self.path)
                if m and m.group(1) in hub.repos and m.group(3) in hub.repos[m.group(1)]:
                    data = hub.repos[m.group(1)][m.group(3)]
                    return self._send(200, data, {"Content-Type": "application/octet-stream", "X-Repo-Commit": SHA,
                                                  "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}, head=head)
                return self._send(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"}, head=head)

            def do_GET(self):
                self._get(False)

            def do_HEAD(self):
                self._get(True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HubStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
