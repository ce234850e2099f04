"""`[execution] engine = "ray"`: extract (llm, hybrid) and ground as Ray Data stages on a local
Ray cluster started here, against the real llama-server and our fault servers. The tables and
manifests must be those of a local run, and no answered request may be sent again: not by
another worker, not by a later run of either engine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from remark_data.config import LLMSpec, Project, load_pipeline_spec
from remark_data.errors import RemarkError
from remark_data.pipeline import STAGES, PipelineRun
from remark_data.runner.stage import StageResult
from tests.conftest import CORPUS, MOVIES_CATALOG, make_project, run_folder
from tests.llm_servers import FaultServer, LlamaServer, free_port
from tests.stages.test_hybrid import _reply
from tests.stages.test_llm import needs_model

DUMP = CORPUS / "reddit/dumps/moviesuggestions_2020-09/ndjson"
THREADS = ("iwjl9p", "it8rgu")  # 2 real requests, 6 short top-level comments
SPEC = (
    """
name = "movies_ray"
[[sources]]
name = "ms"
format = "reddit_dump"
split = "train"
subreddits = ["MovieSuggestions"]
bots = ["AutoModerator", "cinephile_bot"]
{files}
"""
    + MOVIES_CATALOG
    + """[extract]
method = "{method}"
kinds = ["movie"]
seen = {seen}
[extract.llm]
base_url = "{url}"
base_urls = {more_urls}
model = "{model}"
max_retries = 1
timeout = {timeout}
max_tokens = 256
[ground]
methods = ["normalized", "fuzzy"]
[execution]
engine = "{engine}"
workers = 2
batch_size = {batch_size}
ground_batch_size = 8
"""
)
REGISTRY_FILES = """since = 2020-09-12
until = 2020-09-13
[sources.files]
submissions = "reddit-moviesuggestions-submissions"
comments = "reddit-moviesuggestions-comments"
"""
TABLES = (("extract", "mentions"), ("ground", "groundings"), ("aggregate", "labels"))


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster for this module; the stages find it open and use it."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=3e8)
    yield
    ray.shutdown()


def _small_dump(folder: Path) -> str:
    """The `[sources.paths]` of a dump holding only `THREADS` (their submissions, comments)."""
    folder.mkdir(parents=True, exist_ok=True)
    for kind, key in (("submissions", "id"), ("comments", "link_id")):
        lines = (DUMP / f"MovieSuggestions_{kind}.ndjson").read_text().splitlines()
        kept = [line for line in lines if json.loads(line)[key].removeprefix("t3_") in THREADS]
        (folder / f"{kind}.ndjson").write_text("\n".join(kept) + "\n")
    return (
        f'[sources.paths]\nsubmissions = "{folder / "submissions.ndjson"}"\n'
        f'comments = "{folder / "comments.ndjson"}"\n'
    )


def _run(project: Project, *, force: bool = False, **values: object) -> dict[str, StageResult]:
    path = project.pipeline_path("movies_ray")
    defaults = {"more_urls": "[]", "model": "fake", "timeout": 5, "batch_size": 4, "seen": "true"}
    path.write_text(SPEC.format(**(defaults | values)))
    run = PipelineRun(spec=load_pipeline_spec(path), project=project, force=force)
    return {r.stage: r for r in run.run()}


def _assert_same(local: Project, on_ray: Project, *, same_config: bool = True) -> None:
    """Every table equal, row for row; manifests equal but for their timings (and, when the
    runs asked different endpoints, their config and the fingerprints that cover it)."""
    a, b = run_folder(local, "movies_ray"), run_folder(on_ray, "movies_ray")
    for stage, table in TABLES:
        assert a.read(stage, table).equals(b.read(stage, table)), f"{stage}/{table}"
    ignored = {"started_at", "compute_seconds"}
    if not same_config:
        ignored |= {"config", "config_hash", "fingerprint", "upstream"}
    for stage in ("extract", "ground", "aggregate"):
        ma, mb = a.manifest(stage), b.manifest(stage)
        assert ma is not None and mb is not None
        assert ma.model_dump(exclude=ignored) == mb.model_dump(exclude=ignored), stage


@needs_model
def test_ray_run_equals_local_run_on_the_real_llama_server(tmp_path, ray_cluster) -> None:
    files = _small_dump(tmp_path / "dump")
    local, on_ray = (make_project(tmp_path / name) for name in ("local", "ray"))
    common = {"files": files, "method": "llm", "model": "qwen2.5-coder-0.5b", "timeout": 300,
              "seen": "false", "batch_size": 2}  # fmt: skip
    # One slot, no prompt cache: the same prompt gets the same reply in any order.
    server = LlamaServer(threads=2, parallel=1)
    server.args.append("--no-cache-prompt")
    with server:
        first = _run(local, engine="local", url=server.url, **common)
        ray_first = _run(on_ray, engine="ray", url=server.url, **common)
        _assert_same(local, on_ray)
        again = _run(on_ray, engine="ray", url=server.url, force=True, **common)
        # The local run's cache answers a Ray run of the same project: nothing is sent.
        crossed = _run(local, engine="ray", url=server.url, force=True, **common)
    counters = ray_first["extract"].manifest.counters
    assert counters["requests"] >= counters["unique_texts"] >= 5 and counters["ok"] > 0
    assert counters == first["extract"].manifest.counters
    assert run_folder(on_ray, "movies_ray").read("extract", "mentions").height >= 3
    for rerun in (again, crossed):
        counted = rerun["extract"].manifest.counters
        assert counted["requests"] == 0 and counted["cache_hits"] == counted["unique_texts"]
    _assert_same(local, on_ray)


def test_hybrid_on_ray_over_two_endpoints_asks_each_comment_once(tmp_path, ray_cluster) -> None:
    """Hybrid extraction against two fault servers (schema violations, invented candidates and
    titles): the Ray run spreads its requests over both, asks no comment twice, and writes the
    local run's tables; a second Ray run sends nothing."""
    local, on_ray = (make_project(tmp_path / name) for name in ("local", "ray"))
    common = {"files": REGISTRY_FILES, "method": "hybrid"}
    ok = lambda text, attempt: "ok"  # noqa: E731
    with FaultServer(ok, content=_reply) as alone:
        _run(local, engine="local", url=alone.url, **common)
    with FaultServer(ok, content=_reply) as one, FaultServer(ok, content=_reply) as two:
        urls = {"url": one.url, "more_urls": json.dumps([two.url])}
        first = _run(on_ray, engine="ray", **urls, **common)
        _assert_same(local, on_ray, same_config=False)  # the endpoints are in the extract config
        asked = one.requests + two.requests
        again = _run(on_ray, engine="ray", force=True, **urls, **common)
        assert one.requests + two.requests == asked
    counters = first["extract"].manifest.counters
    assert counters["permanent_failures"] > 0 and counters["candidates_invented"] > 0
    assert min(sum(one.requests.values()), sum(two.requests.values())) > 0
    # A schema violation is asked twice (then recorded permanent); every other comment once.
    assert sorted(set(asked.values())) == [1, 2] and sum(asked.values()) == counters["requests"]
    assert sum(1 for n in asked.values() if n == 2) == counters["permanent_failures"]
    assert counters["requests"] == sum(alone.requests.values())
    assert again["extract"].manifest.counters["requests"] == 0


def test_dead_endpoint_on_ray_fails_with_one_line(project, ray_cluster) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(RemarkError, match=re.escape(f"LLM endpoint {url} is unreachable")) as err:
        _run(project, engine="ray", url=url, files=REGISTRY_FILES, method="llm")
    assert "\n" not in str(err.value)


def test_the_engine_is_in_no_fingerprint_and_one_endpoint_dumps_as_before(project) -> None:
    path = project.pipeline_path("movies_ray")
    values = {"files": REGISTRY_FILES, "method": "llm", "url": "http://x/v1", "more_urls": "[]",
              "model": "m", "timeout": 5, "batch_size": 4, "seen": "true"}  # fmt: skip
    hashes = []
    for engine in ("local", "ray"):
        path.write_text(SPEC.format(**values, engine=engine))
        spec = load_pipeline_spec(path)
        hashes.append([spec.section_hash(*stage.sections) for stage in STAGES])
    assert hashes[0] == hashes[1]
    path.write_text(SPEC.format(**values, engine="spark"))
    with pytest.raises(RemarkError, match=r"execution\.engine: Input should be 'local' or 'ray'"):
        load_pipeline_spec(path)
    one = LLMSpec(base_url="http://a/v1", model="m")
    assert "base_urls" not in one.model_dump() and one.endpoints == ["http://a/v1"]
    two = LLMSpec(base_url="http://a/v1", base_urls=["http://b/v1", "http://a/v1"], model="m")
    assert two.endpoints == ["http://a/v1", "http://b/v1"]
