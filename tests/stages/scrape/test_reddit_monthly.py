"""Monthly all-Reddit dumps: month files built from the real r/MovieSuggestions records (half of
the threads moved 20 days back, with their comments), with real AskReddit records and renamed
copies of the real records (other subreddits) mixed in, compressed like the real dumps (zstd,
2 GiB window, no content size). The monthly reader must give exactly what the per-subreddit
reader gives on the MovieSuggestions records alone."""

import gzip
import json
import random
from pathlib import Path

import polars as pl
import pytest

from remark_data.errors import RemarkError
from remark_data.stages.scrape.reddit_dumps import ThreadOptions, read_reddit_dump
from remark_data.stages.scrape.reddit_monthly import RedditMonthly, read_reddit_monthly
from tests.conftest import CORPUS

MOVIES = CORPUS / "reddit/dumps/moviesuggestions_2020-09/ndjson"
ASK = CORPUS / "reddit/dumps/askreddit_magical_movies_2021-04"
SHIFT_SECONDS = 20 * 86400  # moves mid-September threads to late August
BOTS = ["AutoModerator", "cinephile_bot"]


def _month(record: dict) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(record["created_utc"], UTC).strftime("%Y-%m")


def _real_records() -> tuple[list[dict], list[dict]]:
    """The real submissions and comments, every other thread (and its comments) moved back 20
    days, so the threads span August and September 2020 and some August threads are answered
    in September."""
    submissions = [
        json.loads(line) for line in (MOVIES / "MovieSuggestions_submissions.ndjson").open()
    ]
    comments = [json.loads(line) for line in (MOVIES / "MovieSuggestions_comments.ndjson").open()]
    moved = {s["id"] for s in submissions[::2]}
    for record in submissions:
        record["created_utc"] -= SHIFT_SECONDS * (record["id"] in moved)
    for record in comments:
        record["created_utc"] -= SHIFT_SECONDS * (record["link_id"][3:] in moved)
    return submissions, comments


def _others(records: list[dict], names: list[str], seed: int) -> list[dict]:
    """Copies of real records filed under other subreddits (one a prefix of the wanted name)."""
    rng = random.Random(seed)
    return [
        {**r, "id": f"{r['id']}x{i}", "subreddit": rng.choice(names)} for i, r in enumerate(records)
    ]


def _write_zst(path: Path, records: list[dict], *, extra_lines: list[bytes] = ()) -> None:
    import zstandard

    lines = [json.dumps(r, separators=(",", ":")).encode() for r in records] + list(extra_lines)
    random.Random(path.name).shuffle(lines)
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with (
        path.open("wb") as raw,
        zstandard.ZstdCompressor(compression_params=params).stream_writer(raw) as out,
    ):
        out.write(b"\n".join(lines) + b"\n")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A folder of month files (submissions/ and comments/ as the torrents lay them out) and
    the MovieSuggestions records alone as a pair of NDJSON files."""
    folder = tmp_path_factory.mktemp("monthly")
    submissions, comments = _real_records()
    ask_lines = gzip.decompress((ASK / "AskReddit_mx0pwd_comments.ndjson.gz").read_bytes())
    ask = [json.loads(line) for line in ask_lines.splitlines()]
    decoys = ["MovieSuggestionsArchive", "movies", "AskReddit", "booksuggestions"]
    for month in ("2020-08", "2020-09", "2020-10"):
        subs = [s for s in submissions if _month(s) == month]
        coms = [c for c in comments if _month(c) == month]
        other_subs = _others(submissions, decoys, seed=len(month))
        other_coms = ask[::3] if month == "2020-09" else _others(comments[:2000], decoys, seed=1)
        malformed = [
            b'{"subreddit":"AskReddit","id":"broken',
            b'{"subreddit":"MovieSuggestions","id":',
        ]
        _write_zst(folder / f"submissions/RS_{month}.zst", subs + other_subs)
        _write_zst(folder / f"comments/RC_{month}.zst", coms + other_coms, extra_lines=malformed)
    alone = tmp_path_factory.mktemp("alone")
    for name, records in (("submissions", submissions), ("comments", comments)):
        (alone / f"{name}.ndjson").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder, alone


def _spec(**options) -> RedditMonthly:
    return RedditMonthly.model_validate(
        {"name": "monthly", "format": "reddit_monthly", "split": "train",
         "paths": {"dumps": "unused"}, "subreddits": ["moviesuggestions"], "bots": BOTS, **options}
    )  # fmt: skip


def _alone(alone: Path, **options) -> tuple[pl.DataFrame, pl.DataFrame]:
    scraped = read_reddit_dump(
        alone / "submissions.ndjson",
        alone / "comments.ndjson",
        dataset="d",
        source="monthly",
        split="train",
        options=ThreadOptions(subreddits=["MovieSuggestions"], bots=BOTS, **options),
    )
    return scraped.requests, scraped.responses


def test_month_range_reads_what_the_subreddit_dump_holds(dumps: tuple[Path, Path]) -> None:
    folder, alone = dumps
    spec = _spec(first_month="2020-08", last_month="2020-09", workers=2)
    scraped = read_reddit_monthly(spec, folder, dataset="d")
    requests, responses = _alone(alone)
    assert requests.height == 293
    assert scraped.requests.sort("request_id").equals(requests.sort("request_id"))
    assert scraped.responses.sort("response_id").equals(responses.sort("response_id"))
    # 3 files of comments (October past the range), 2 of submissions; decoys never kept.
    assert scraped.counters["files.comments"] == 3
    assert scraped.counters["files.submissions"] == 2
    assert sum(v for k, v in scraped.counters.items() if k.startswith("kept.RS_")) == 293
    # Where the wanted lines are few, only the malformed line of the wanted subreddit is parsed
    # (and quarantined); where they are most of a block, the whole block is parsed.
    assert scraped.counters["quarantined.malformed line in RC_2020-09.zst"] == 1
    assert scraped.counters["quarantined.malformed line in RC_2020-10.zst"] == 1
    assert scraped.counters["quarantined.malformed line in RC_2020-08.zst"] == 2
    assert not any("AskReddit" in q and "RC_2020-09" in q for q in scraped.quarantine)
    assert any("MovieSuggestions" in q and "RC_2020-09" in q for q in scraped.quarantine)


def test_one_process_gives_what_two_give(dumps: tuple[Path, Path]) -> None:
    folder, _ = dumps
    one = read_reddit_monthly(
        _spec(first_month="2020-08", last_month="2020-09", workers=1), folder, dataset="d"
    )
    two = read_reddit_monthly(
        _spec(first_month="2020-08", last_month="2020-09", workers=2), folder, dataset="d"
    )
    assert one.responses.equals(two.responses)
    assert one.counters == two.counters


def test_comments_of_the_next_month_answer_the_last_month(dumps: tuple[Path, Path]) -> None:
    folder, alone = dumps
    august = {"since": "2020-08-01", "until": "2020-09-01"}
    requests, responses = _alone(alone, **august)
    with_next = read_reddit_monthly(
        _spec(first_month="2020-08", last_month="2020-08"), folder, dataset="d"
    )
    assert with_next.requests.sort("request_id").equals(requests.sort("request_id"))
    assert with_next.responses.sort("response_id").equals(responses.sort("response_id"))
    without = read_reddit_monthly(
        _spec(first_month="2020-08", last_month="2020-08", comment_months_after=0),
        folder,
        dataset="d",
    )
    # Independently: the August threads' comments posted in August only.
    _, comments = _real_records()
    threads = set(requests["request_id"])
    in_august = {
        c["id"] for c in comments if c["link_id"][3:] in threads and _month(c) == "2020-08"
    }
    kept = {c for ids in without.responses["comment_ids"] for c in ids}
    assert kept and kept <= in_august
    assert without.responses.height < with_next.responses.height


def test_missing_months_are_named_and_only_read_files_are_inputs(dumps: tuple[Path, Path]) -> None:
    folder, _ = dumps
    with pytest.raises(RemarkError, match="no dump file for RS_2020-07, RC_2020-07"):
        _spec(first_month="2020-07", last_month="2020-08").month_files(folder)
    inputs = _spec(first_month="2020-09", last_month="2020-09").input_files({"dumps": folder})
    assert sorted(inputs) == ["RC_2020-09.zst", "RC_2020-10.zst", "RS_2020-09.zst"]
    with pytest.raises(ValueError, match="needs `subreddits`"):
        _spec(first_month="2020-09", last_month="2020-09", subreddits=[])


def test_scrape_stage_fingerprints_the_months_read_only(dumps: tuple[Path, Path], project) -> None:
    from remark_data.pipeline import run_pipelines

    folder, _ = dumps
    spec = (project.root / "pipelines/reddit_movies.toml").read_text()
    sources = spec[spec.index("[[sources]]") : spec.index("[catalog]")]
    monthly = f"""[[sources]]
name = "pushshift"
format = "reddit_monthly"
split = "train"
paths = {{ dumps = "{folder}" }}
first_month = "2020-09"
last_month = "2020-09"
subreddits = ["MovieSuggestions"]
bots = {BOTS!r}

"""
    (project.root / "pipelines/monthly.toml").write_text(
        spec.replace(sources, monthly).replace('name = "reddit_movies"', 'name = "monthly"')
    )
    first = run_pipelines(project, ["monthly"], stages=["scrape"])["monthly"][0]
    assert first.status == "ran"
    assert sorted(first.manifest.inputs) == [
        "pushshift.RC_2020-09.zst", "pushshift.RC_2020-10.zst", "pushshift.RS_2020-09.zst"
    ]  # fmt: skip
    september = sum(_month(s) == "2020-09" for s in _real_records()[0])
    assert first.manifest.counters["pushshift.requests"] == september
    # A month outside the range appears: nothing it could change is re-read.
    (folder / "RS_2021-01.zst").write_bytes((folder / "submissions/RS_2020-08.zst").read_bytes())
    try:
        again = run_pipelines(project, ["monthly"], stages=["scrape"])["monthly"][0]
    finally:
        (folder / "RS_2021-01.zst").unlink()
    assert again.status == "skipped"


def test_a_cut_month_file_is_one_error_naming_it(dumps: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    folder, _ = dumps
    copy = tmp_path / "dumps"
    shutil.copytree(folder, copy)
    cut = copy / "comments/RC_2020-09.zst"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    spec = _spec(first_month="2020-08", last_month="2020-09", workers=2)
    with pytest.raises(RemarkError, match=r"RC_2020-09\.zst: truncated zstd data: .* byte \d+"):
        read_reddit_monthly(spec, copy, dataset="d")
