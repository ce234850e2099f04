"""A local stand-in for the Hugging Face Hub API on 127.0.0.1 (see ../shared/HUB.md): it answers
the calls `remark publish` makes, keeps committed files in memory, and records every request."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HubStandIn:
    def __init__(self, *, fail_commits: bool = False) -> None:
        self.requests: list[dict] = []
        self.files: dict[str, bytes] = {}
        self.commits: list[list[str]] = []
        self.fail_commits = fail_commits
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, body: dict) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _record(self, body: bytes) -> None:
                hub.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": body,
                    }
                )

            def do_GET(self) -> None:
                self._record(b"")
                found = re.match(r"^/api/datasets/([^/]+/[^/?]+)", self.path)
                if not found:
                    return self._reply(404, {"error": "not found"})
                siblings = [
                    {
                        "rfilename": name,
                        "size": len(data),
                        "blobId": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
                    }
                    for name, data in sorted(hub.files.items())
                ]
                self._reply(
                    200, {"id": found[1], "sha": "0" * 40, "siblings": siblings, "private": False}
                )

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._record(body)
                endpoint = f"http://127.0.0.1:{hub.port}"
                if self.path == "/api/repos/create":
                    name = json.loads(body)
                    repo = (
                        f"{name.get('organization')}/{name['name']}"
                        if name.get("organization")
                        else name["name"]
                    )
                    return self._reply(200, {"url": f"{endpoint}/datasets/{repo}", "name": repo})
                if self.path == "/api/validate-yaml":
                    return self._reply(200, {"errors": [], "warnings": []})
                if "/preupload/" in self.path:
                    files = json.loads(body)["files"]
                    return self._reply(
                        200,
                        {
                            "files": [
                                {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                for f in files
                            ]
                        },
                    )
                if "/commit/" in self.path:
                    if hub.fail_commits:
                        return self._reply(500, {"error": "internal error"})
                    paths = []
                    for line in body.splitlines():
                        item = json.loads(line)
                        if item.get("key") == "file":
                            value = item["value"]
                            hub.files[value["path"]] = base64.b64decode(value["content"])
                            paths.append(value["path"])
                    hub.commits.append(paths)
                    repo = re.match(r"^/api/datasets/([^/]+/[^/]+)/commit/", self.path)[1]
                    url = f"{endpoint}/datasets/{repo}/commit/{'a' * 40}"
                    return self._reply(200, {"commitUrl": url, "commitOid": "a" * 40})
                self._reply(404, {"error": "not found"})

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
