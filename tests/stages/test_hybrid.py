"""`method = "hybrid"`: the gazetteer's candidates checked by a model, against our fault server
(schema violations in the stance field, invented candidates and titles) and the real
llama-server on real r/MovieSuggestions comments."""

import json
import re

import pytest

from remark_data.config import LLMSpec, load_pipeline_spec
from remark_data.pipeline import PipelineRun
from remark_data.stages.extract.llm import cache_key, extract_with_llm
from remark_data.stages.extract.llm.hybrid import HybridAnswer, HybridTask
from tests.conftest import MOVIES_CATALOG, run_folder
from tests.llm_servers import MODEL, FaultServer, LlamaServer, llm_required
from tests.stages.test_llm import REAL

SPEC = (
    """
name = "reddit_hybrid"
[[sources]]
name = "ms"
format = "reddit_dump"
split = "train"
subreddits = ["MovieSuggestions"]
since = 2020-09-12
until = 2020-09-14
bots = ["AutoModerator", "cinephile_bot"]
[sources.files]
submissions = "reddit-moviesuggestions-submissions"
comments = "reddit-moviesuggestions-comments"
"""
    + MOVIES_CATALOG
    + """[extract]
method = "hybrid"
kinds = ["movie"]
[extract.llm]
base_url = "{url}"
model = "fake"
max_retries = 1
timeout = 5
[ground]
methods = ["normalized", "fuzzy"]
"""
)


def _candidates(message: str) -> list[str]:
    return re.findall(r"^\[\d+\] (.*)$", message.split("\nCandidates:\n", 1)[1], re.M)


def _reply(message: str, _: int) -> str:
    """Drops every candidate named 'Heat'-like by its index parity, marks the rest negative or
    recommended, invents candidate 40 and two titles (one in the comment, one not), and breaks
    the stance field for comments whose length is divisible by 3."""
    comment = message.split("\nComment: ", 1)[1].split("\nCandidates:\n", 1)[0]
    verdicts = [
        {"index": i, "keep": i % 3 != 2, "stance": "negative" if i % 3 == 1 else "recommended"}
        for i, _ in enumerate(_candidates(message))
    ]
    verdicts.append({"index": 40, "keep": True, "stance": "recommended"})
    if len(comment) % 3 == 0 and verdicts:
        verdicts[0]["stance"] = "loved it"  # not a stance: a schema violation
    words = [w for w in re.findall(r"[A-Z][a-z]{3,}", comment)]
    missed = [{"title": "Inception", "year": None, "creator": None, "kind": "movie",
               "stance": "recommended"}]  # fmt: skip
    if words:
        missed.append({"title": words[-1], "year": None, "creator": None, "kind": "movie",
                       "stance": "recommended"})  # fmt: skip
    return json.dumps({"candidates": verdicts, "missed": missed})


def test_hybrid_pipeline_keeps_drops_and_guards(project) -> None:
    with FaultServer(lambda text, attempt: "ok", content=_reply) as server:
        path = project.pipeline_path("reddit_hybrid")
        path.write_text(SPEC.format(url=server.url))
        spec = load_pipeline_spec(path)
        runs = {r.stage: r for r in PipelineRun(spec=spec, project=project).run()}
        counters = runs["extract"].manifest.counters
        asked = sum(server.requests.values())
        again = {r.stage: r.status for r in PipelineRun(spec=spec, project=project).run()}
    folder = run_folder(project, "reddit_hybrid")
    mentions = folder.read("extract", "mentions")
    comments = counters["comments_asked"] + counters["comments_skipped"]
    assert counters["comments_skipped"] > 0 and comments == counters["comments_scanned"]
    # Every candidate is kept, dropped or unjudged; schema failures leave theirs unjudged.
    assert counters["permanent_failures"] > 0, counters
    judged = counters["candidates_kept"] + counters["candidates_dropped"]
    assert judged + counters["candidates_unjudged"] == counters["candidates"] > 0
    assert counters["candidates_dropped"] > 0 and counters["candidates_unjudged"] > 0
    # Index 40 is invented once per answered comment (identical comments share one answer).
    assert counters["ok"] <= counters["candidates_invented"] <= counters["comments_asked"]
    # "Inception", added to every comment, is dropped wherever the comment does not name it.
    assert counters["dropped_titles"] > 0
    added = mentions.filter(mentions["mention_id"].str.contains("#h"))
    assert added.height == counters["titles_added"] > 0
    responses = folder.read("scrape", "responses").select("response_id", "text")
    texts = dict(responses.iter_rows())
    for surface, response_id, extractor in (
        mentions.filter(mentions["role"] == "response")
        .select("surface", "response_id", "extractor")
        .iter_rows()
    ):
        assert surface.casefold() in texts[response_id].casefold()
        assert extractor in ("hybrid", "gazetteer")
    # Kept candidates carry the model's stance; what it could not judge keeps the rules'.
    hybrid = mentions.filter(mentions["extractor"] == "hybrid")
    assert "negative" in set(hybrid["stance"])
    assert again["extract"] == "skipped" and sum(server.requests.values()) == asked


def test_a_second_run_asks_nothing_cached(tmp_path) -> None:
    texts = {i: t for i, t in enumerate(REAL[:6])}
    task = HybridTask(kinds=("movie",))
    messages = {i: task.add(comment=t, request="Movies?", candidates=[]) for i, t in texts.items()}
    with FaultServer(lambda text, attempt: "ok", content=_reply) as server:
        spec = LLMSpec(base_url=server.url, model="fake", timeout=5)
        first = extract_with_llm(messages, spec=spec, kinds=["movie"], task=task,
                                 cache_path=tmp_path / "c.sqlite")  # fmt: skip
        second = extract_with_llm(messages, spec=spec, kinds=["movie"], task=task,
                                  cache_path=tmp_path / "c.sqlite")  # fmt: skip
    assert first.requests >= len(messages) and second.requests == 0
    assert second.cache_hits == len(set(messages.values()))
    key = cache_key(messages[0], spec=spec, kinds=["movie"], task=task)
    assert key != cache_key(messages[0], spec=spec, kinds=["movie"])  # not the title task's


@pytest.mark.skipif(not MODEL.is_file() and not llm_required(), reason="no local model (make llm)")
def test_real_llama_server_checks_real_candidates(tmp_path) -> None:
    """Loose: every reply fits the schema, kept verdicts point at real candidates, added titles
    occur in their comment."""
    comments = [c for c in REAL if "(" in c][:8]
    task = HybridTask(kinds=("movie",), few_shot=True)
    found = [re.findall(r"([A-Z][\w' ]+?) \(\d{4}\)", c) for c in comments]
    messages = {
        i: task.add(comment=c, request="Looking for movies", candidates=f)
        for i, (c, f) in enumerate(zip(comments, found, strict=True))
    }
    with LlamaServer(threads=2, parallel=4) as server:
        spec = LLMSpec(base_url=server.url, model="qwen2.5-coder-0.5b", timeout=300)
        summary = extract_with_llm(messages, spec=spec, kinds=["movie"], task=task,
                                   cache_path=tmp_path / "c.sqlite")  # fmt: skip
    assert summary.ok == len(messages) and summary.permanent == 0
    for i, message in messages.items():
        result = summary.results[cache_key(message, spec=spec, kinds=["movie"], task=task)]
        HybridAnswer.model_validate_json(result["raw"])
        checked = result["titles"]
        assert all(v["index"] < len(found[i]) for v in checked["candidates"])
        for title in checked["missed"]:
            assert title["title"].casefold() in comments[i].casefold() or title["kind"] == "movie"
