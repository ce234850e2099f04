"""OpenAI-compatible chat servers on 127.0.0.1 for the extraction tests: a scripted fault
injector of our own, and the real llama-server with Qwen2.5-Coder-0.5B (scripts/install_llm.sh)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "data/cache/llm-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
# the server binary that passed the probe of scripts/install_llm.sh (prebuilt or built from source)
SERVER_RECORD = REPO / "data/cache/llm-models/server.path"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FaultServer:
    """Answers chat completions; `plan(text, attempt)` picks the behaviour of each request:
    "ok", "429", "500", "slow", "drop", "malformed" or "hallucinate"."""

    def __init__(self, plan, *, delay: float = 0.0, content=None) -> None:
        self.plan = plan
        self.content = content  # optional (text, request number) -> reply text, for "ok"
        self.delay = delay
        self.requests: Counter[str] = Counter()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = body["messages"][-1]["content"]
                with server.lock:
                    server.requests[text] += 1
                    attempt = server.requests[text]
                behaviour = server.plan(text, attempt)
                time.sleep(server.delay)
                if behaviour == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if behaviour == "slow":
                    time.sleep(3)
                if behaviour in ("429", "500"):
                    payload = json.dumps({"error": {"message": behaviour}}).encode()
                    self.send_response(int(behaviour))
                else:
                    words = re.findall(r"[A-Z][a-z]+", text)[:2]
                    titles = [
                        {
                            "title": w,
                            "year": None,
                            "creator": None,
                            "kind": "movie",
                            "stance": "recommended",
                        }
                        for w in words
                    ]
                    if behaviour == "hallucinate":
                        titles.append(
                            {
                                "title": "The Room",
                                "year": 2003,
                                "creator": None,
                                "kind": "movie",
                                "stance": "recommended",
                            }
                        )
                    content = (
                        "not json {" if behaviour == "malformed" else json.dumps({"titles": titles})
                    )
                    if server.content is not None and behaviour == "ok":
                        content = server.content(text, sum(server.requests.values()))
                    payload = json.dumps(
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "created": 0,
                            "model": body["model"],
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content},
                                }
                            ],
                            "usage": {
                                "prompt_tokens": 10,
                                "completion_tokens": 5,
                                "total_tokens": 15,
                            },
                        }
                    ).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:
                pass  # dropped connections are the point of some behaviours

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()


def llama_server_binary() -> str | None:
    """The llama-server that scripts/install_llm.sh probed on this machine (recorded in
    SERVER_RECORD), else the prebuilt `llama-server-vulkan` of .venv/bin or PATH."""
    if SERVER_RECORD.is_file():
        recorded = SERVER_RECORD.read_text().strip()
        if recorded and os.access(recorded, os.X_OK):
            return recorded
    return shutil.which("llama-server-vulkan", path=str(REPO / ".venv/bin")) or shutil.which(
        "llama-server-vulkan"
    )


def llm_required() -> bool:
    """REMARK_REQUIRE_LLM=1 (CI): a missing server or model is a failure, not a skip."""
    return os.environ.get("REMARK_REQUIRE_LLM") == "1"


class LlamaServer:
    """The real llama-server on a free port of 127.0.0.1."""

    def __init__(self, *, threads: int = 2, parallel: int = 4, model: Path = MODEL) -> None:
        binary = llama_server_binary()
        if binary is None or not model.is_file():
            raise FileNotFoundError("no llama-server or model: run scripts/install_llm.sh first")
        self.binary = binary
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.args = [
            binary,
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "-t",
            str(threads),
            "-c",
            "8192",
            "-np",
            str(parallel),
            "--no-webui",
        ]

    def _stderr_tail(self, lines: int = 8) -> str:
        self.stderr.flush()
        self.stderr.seek(0)
        tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-lines:]
        return "\n".join("    " + line for line in tail)

    def _fail(self, why: str) -> RuntimeError:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        error = RuntimeError(f"{why} ({self.binary}); last stderr lines:\n{self._stderr_tail()}")
        self.stderr.close()
        return error

    def __enter__(self) -> LlamaServer:
        # stderr goes to a file (a pipe nobody reads could fill and block the server)
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.time() + 60
        while time.time() < deadline:
            code = self.process.poll()
            if code is not None:
                # killed by a signal (SIGILL: a CPU instruction this machine lacks) or exited
                how = f"killed by {signal.strsignal(-code)}" if code < 0 else f"exited ({code})"
                raise self._fail(f"llama-server {how} before /health answered")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        raise self._fail("llama-server did not become healthy within 60 s")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stderr.close()
