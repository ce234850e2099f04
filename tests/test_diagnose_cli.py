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
