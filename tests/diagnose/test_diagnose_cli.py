"""`remark diagnose` end to end: rollouts file, ProtoQA's real lists, popularity, and a real
OpenAI-compatible HTTP endpoint on 127.0.0.1."""

import json

import pytest

from tests.conftest import CORPUS
from tests.llm_servers import FaultServer
from tests.test_cli import remark


@pytest.fixture
def ran(project):
    assert remark(project, "run", "reddit_v2").returncode == 0
    return project


def test_diagnose_from_a_local_openai_compatible_server(ran) -> None:
    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())
    titles = sorted(
        {f"{t} ({y})" for s in samples["samples"] for t, y in s["groundtruth_with_release_year"]}
    )

    def twenty_lines(text: str, number: int) -> str:  # a 20-line list of real catalog titles
        start = (number * 7) % (len(titles) - 20)
        return "\n".join(f"{k + 1}. {t}" for k, t in enumerate(titles[start : start + 20]))

    with FaultServer(lambda text, attempt: "ok", content=twenty_lines) as server:
        result = remark(ran, "diagnose", "reddit_v2", "--endpoint", server.url, "--model", "tiny",
                        "-G", "4", "--limit", "10", "--format", "json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)[0]
    assert sum(server.requests.values()) == 10 * 4
    assert report["n_requests"] == 10 and report["group_size_mean"] == 4
    assert 0 <= report["responder_share_scaled"] <= 1


def test_diagnose_unreachable_endpoint_is_one_line(ran) -> None:
    result = remark(
        ran, "diagnose", "reddit_v2", "--endpoint", "http://127.0.0.1:9/v1", "--limit", "1"
    )
    assert result.returncode == 2
    assert "unreachable" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def _sample_lists(*, lines: int) -> dict[str, list[str]]:
    """The Reddit-v2 sample's real completions cut to their first `lines` lines, per request."""
    from remark_data.stages.scrape.rank_grpo import prompt_request_id

    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    lists: dict[str, list[str]] = {}
    for s in samples:
        text = "\n".join(s["completion"][0]["content"].splitlines()[:lines])
        lists.setdefault(prompt_request_id(s["prompt"][0]["content"]), []).append(text)
    return lists


def _one_line_error(result) -> str:
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_diagnose_rollouts_file_infers_ranks_and_refuses_bad_files(ran, tmp_path) -> None:
    lists = _sample_lists(lines=10)
    path = tmp_path / "rollouts.jsonl"
    body = [json.dumps({"request_id": r, "completions": c}) for r, c in lists.items()]
    path.write_text("\n".join(body) + "\n")
    result = remark(ran, "diagnose", "reddit_v2", "--rollouts", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)[0]
    assert report["ranks"] == 10  # from the lists, not a fixed 20 with 10 empty ranks
    assert report["n_requests"] == sum(1 for c in lists.values() if len(c) >= 2) == 16
    assert report["no_signal_cells_union"] < report["no_signal_cells_responder"]
    explicit = remark(ran, "diagnose", "reddit_v2", "--rollouts", str(path), "-K", "10",
                      "--format", "json")  # fmt: skip
    assert json.loads(explicit.stdout)[0] == report
    longer = remark(ran, "diagnose", "reddit_v2", "--rollouts", str(path), "-K", "20")
    assert "longest list in" in _one_line_error(longer)
    # A string where a list belongs is an error naming the line, not 13 one-letter lists.
    first = body[0]
    path.write_text(
        f"{first}\n" + json.dumps({"request_id": "x", "completions": "1. The Matrix"}) + "\n"
    )
    bad = remark(ran, "diagnose", "reddit_v2", "--rollouts", str(path))
    assert f"{path}:2: completions" in _one_line_error(bad)
    path.write_text(json.dumps({"request_id": "not-a-request", "completions": ["1. Heat"]}) + "\n")
    unmatched = remark(ran, "diagnose", "reddit_v2", "--rollouts", str(path))
    assert "none of the 1 request ids" in _one_line_error(unmatched)
    table = remark(ran, "diagnose", "reddit_v2", "--popularity")
    assert "union rewards remove it entirely" in table.stdout


class _KeyServer:
    """A minimal OpenAI-compatible chat server that records each request's Authorization."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.authorizations: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.authorizations.append(self.headers.get("Authorization", ""))
                message = {"role": "assistant", "content": "1. Heat (1995)\n2. Alien (1979)"}
                payload = json.dumps(
                    {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
                ).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "_KeyServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"REMARK_LLM_API_KEY": "remark-key", "OPENAI_API_KEY": "openai-key"}, "remark-key"),
        ({"OPENAI_API_KEY": "openai-key"}, "openai-key"),
        ({}, "not-needed"),
    ],
)
def test_endpoint_key_follows_the_extraction_rule(monkeypatch, env, expected) -> None:
    """REMARK_LLM_API_KEY first, then OPENAI_API_KEY, as LLM extraction does."""
    from remark_data.diagnose.endpoint import sample_endpoint

    for name in ("REMARK_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with _KeyServer() as server:
        rollouts = sample_endpoint({"r1": "films like Heat?"}, base_url=server.url, model="m",
                                   group_size=2)  # fmt: skip
    assert server.authorizations == [f"Bearer {expected}"] * 2
    assert rollouts.completions == {"r1": ["1. Heat (1995)\n2. Alien (1979)"] * 2}
    assert rollouts.source == server.url


def test_diagnose_needs_exactly_one_policy(ran) -> None:
    result = remark(ran, "diagnose", "reddit_v2")
    assert result.returncode == 2 and "choose exactly one" in result.stderr


def test_diagnose_is_one_library_call(built_project) -> None:
    """What the command calls: the report it renders, kept under the run."""
    from remark_data.diagnose.report import Popularity, choose_policy, run_diagnosis
    from remark_data.errors import RemarkError

    report = run_diagnosis(built_project, "reddit_v2", policy=Popularity(), group_size=4, limit=10)
    assert report.policy == "popularity" and report.frame["n_requests"].to_list() == [10]
    assert report.saved == built_project.runs_dir / "reddit_v2/diagnostics/popularity.parquet"
    assert report.metrics().columns == ["metric", "reddit_v2/train"]
    ((where, verdict),) = report.verdicts()
    assert where == "reddit_v2/train" and verdict.startswith("Under per-responder rewards")
    assert choose_policy(popularity=True) == Popularity()
    with pytest.raises(RemarkError, match="choose exactly one"):
        choose_policy(popularity=True, endpoint="http://127.0.0.1:9/v1")
