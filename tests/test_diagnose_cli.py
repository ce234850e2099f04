"""`remark diagnose` end to end: rollouts file, ProtoQA's real lists, popularity, and a real
OpenAI-compatible HTTP endpoint on 127.0.0.1."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from tests.conftest import CORPUS
from tests.test_cli import remark


@pytest.fixture
def ran(project):
    assert remark(project, "run", "reddit_v2").returncode == 0
    return project


class _ChatServer(BaseHTTPRequestHandler):
    """Speaks /v1/chat/completions; answers with a 20-line list of real catalog titles."""

    titles: ClassVar[list[str]] = []
    requests: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        start = (len(type(self).requests) * 7) % (len(self.titles) - 20)
        content = "\n".join(f"{k + 1}. {t}" for k, t in enumerate(self.titles[start : start + 20]))
        payload = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


def test_diagnose_from_a_local_openai_compatible_server(ran) -> None:
    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    _ChatServer.titles = sorted(
        {f"{t} ({y})" for s in samples for t, y in s["groundtruth_with_release_year"]}
    )
    _ChatServer.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        result = remark(ran, "diagnose", "reddit_v2", "--endpoint", url, "--model", "tiny",
                        "-G", "4", "--limit", "10", "--format", "json")  # fmt: skip
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)[0]
    assert len(_ChatServer.requests) == 10 * 4
    assert report["n_requests"] == 10 and report["group_size_mean"] == 4
    assert 0 <= report["responder_share_scaled"] <= 1


def test_diagnose_unreachable_endpoint_is_one_line(ran) -> None:
    result = remark(
        ran, "diagnose", "reddit_v2", "--endpoint", "http://127.0.0.1:9/v1", "--limit", "1"
    )
    assert result.returncode == 2
    assert "unreachable" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_diagnose_rollouts_file_quarantines_bad_lines(ran, tmp_path) -> None:
    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    from remark_data.scrape.rank_grpo import prompt_request_id

    lines = {}
    for s in samples:
        lines.setdefault(prompt_request_id(s["prompt"][0]["content"]), []).append(
            s["completion"][0]["content"]
        )
    path = tmp_path / "rollouts.jsonl"
    body = [json.dumps({"request_id": r, "completions": c}) for r, c in lines.items()]
    path.write_text(
        "\n".join([*body, "{not json", json.dumps({"request_id": 3, "completions": []})]) + "\n"
    )
    result = remark(ran, "diagnose", "reddit_v2", "--rollouts", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)[0]
    assert report["malformed_lines"] == 2
    assert report["n_requests"] == sum(1 for c in lines.values() if len(c) >= 2) == 16
    table = remark(ran, "diagnose", "reddit_v2", "--popularity")
    assert "union rewards remove it entirely" in table.stdout


def test_diagnose_needs_exactly_one_policy(ran) -> None:
    result = remark(ran, "diagnose", "reddit_v2")
    assert result.returncode == 2 and "choose exactly one" in result.stderr
