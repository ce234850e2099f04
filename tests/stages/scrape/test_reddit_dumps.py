"""Reddit dumps: the 2 GiB-window .zst files, responder counts recomputed from the NDJSON, and
quarantine counts on a copy of the real comments with injected faults."""

import collections
import gzip
import json
import shutil
import subprocess

import polars as pl
import pytest

from remark_data.stages.scrape.dumps import Quarantine, read_dump
from remark_data.stages.scrape.reddit_dumps import COMMENT_SCHEMA, ThreadOptions, read_reddit_dump
from tests.conftest import CORPUS

MOVIES = CORPUS / "reddit/dumps/moviesuggestions_2020-09"
ASK = CORPUS / "reddit/dumps/askreddit_magical_movies_2021-04"


def test_zst_with_2gib_window_reads_like_the_ndjson() -> None:
    import zstandard

    with pytest.raises(zstandard.ZstdError, match="Frame requires too much memory"):
        zstandard.ZstdDecompressor().decompressobj().decompress(
            (MOVIES / "MovieSuggestions_comments.zst").read_bytes()
        )
    from_zst = read_dump(
        MOVIES / "MovieSuggestions_comments.zst", COMMENT_SCHEMA, quarantine=Quarantine()
    )
    from_ndjson = read_dump(
        MOVIES / "ndjson/MovieSuggestions_comments.ndjson", COMMENT_SCHEMA, quarantine=Quarantine()
    )
    assert from_zst.height == 4804
    assert from_zst.equals(from_ndjson)


def _independent_counts(*, top_level: bool, bots: set[str]) -> dict[str, int]:
    """Distinct non-null authors per thread, excluding the OP, bots and [deleted]."""
    ops = {}
    for line in (MOVIES / "ndjson/MovieSuggestions_submissions.ndjson").read_text().splitlines():
        record = json.loads(line)
        ops[record["id"]] = record.get("author")
    per_thread = collections.defaultdict(set)
    for line in (MOVIES / "ndjson/MovieSuggestions_comments.ndjson").read_text().splitlines():
        c = json.loads(line)
        thread = c["link_id"][3:]
        if thread not in ops or (top_level and c["parent_id"] != c["link_id"]):
            continue
        author = c.get("author")
        if author is None or author in ("[deleted]", "[removed]") or author in bots:
            continue
        if c["body"].strip() in ("[deleted]", "[removed]"):  # says nothing
            continue
        if author == ops[thread] or c.get("is_submitter"):
            continue
        per_thread[thread].add(author)
    return {t: len(per_thread[t]) for t in ops}


@pytest.mark.parametrize(
    ("include_replies", "bots", "threads_with_two"),
    [
        (True, ["AutoModerator"], 258),
        (False, ["AutoModerator"], 255),
        (False, ["AutoModerator", "cinephile_bot"], 244),
    ],
)
def test_moviesuggestions_responders_per_thread(include_replies, bots, threads_with_two) -> None:
    options = ThreadOptions(
        subreddits=["MovieSuggestions"], include_replies=include_replies, bots=bots
    )
    source = read_reddit_dump(
        MOVIES / "MovieSuggestions_submissions.zst", MOVIES / "MovieSuggestions_comments.zst",
        dataset="d", source="s", split="train", options=options,
    )  # fmt: skip
    assert source.requests.height == 293
    named = source.responses.filter(pl.col("responder_flag").is_null())
    counts = dict(named.group_by("request_id").len().iter_rows())
    expected = _independent_counts(top_level=not include_replies, bots=set(bots))
    assert {t: counts.get(t, 0) for t in expected} == expected
    assert sum(1 for n in expected.values() if n >= 2) == threads_with_two
    # One author's several comments are one responder whose text holds all of them.
    assert named.select("request_id", "responder_id").is_unique().all()


def test_askreddit_thread_authors_and_null_author_comments() -> None:
    options = ThreadOptions(subreddits=["AskReddit"], include_replies=True, bots=[])
    source = read_reddit_dump(
        ASK / "AskReddit_mx0pwd_submission.ndjson", ASK / "AskReddit_mx0pwd_comments.ndjson.gz",
        dataset="d", source="s", split="train", options=options,
    )  # fmt: skip
    flags = source.responses["responder_flag"].value_counts()
    # 506 null-author comments, 117 of them only "[deleted]" / "[removed]": those say nothing.
    assert dict(flags.iter_rows()) == {None: 31672, "null_author": 389}
    assert source.counters["deleted_bodies"] == 117
    with gzip.open(ASK / "AskReddit_mx0pwd_comments.ndjson.gz", "rt") as handle:
        comments = [json.loads(line) for line in handle]
    assert len(comments) == 40908
    said = [c for c in comments if c["body"].strip() not in ("[deleted]", "[removed]")]
    assert len({c["author"] for c in said if c.get("author") is not None}) == 31672
    assert sum(1 for c in said if c.get("author") is None) == 389
    assert "&amp;" not in "".join(source.responses["text"].drop_nulls().to_list())


def test_askreddit_top_level_deleted_bodies_are_no_responders() -> None:
    options = ThreadOptions(subreddits=["AskReddit"], bots=[])
    source = read_reddit_dump(
        ASK / "AskReddit_mx0pwd_submission.ndjson", ASK / "AskReddit_mx0pwd_comments.ndjson.gz",
        dataset="d", source="s", split="train", options=options,
    )  # fmt: skip
    assert source.counters["deleted_bodies"] == 22
    assert source.responses.height == 24866  # was 24888 with the 22 placeholders
    texts = source.responses["text"].str.strip_chars()
    assert not texts.is_in(["[deleted]", "[removed]"]).any()


def test_faults_are_quarantined_and_counted(tmp_path) -> None:
    lines = (MOVIES / "ndjson/MovieSuggestions_comments.ndjson").read_text().splitlines()
    faulty = list(lines)
    faulty.insert(10, '{"id": "broken", "body": "unterminated')  # malformed JSON
    faulty.insert(20, "[1, 2, 3]")  # valid JSON, not an object
    faulty.insert(30, "not json at all")
    faulty += lines[100:105]  # five duplicate ids
    orphan = json.loads(lines[0]) | {
        "id": "orphan1",
        "link_id": "t3_nothread",
        "parent_id": "t3_nothread",
    }
    faulty.append(json.dumps(orphan))
    plain = tmp_path / "comments.ndjson"
    plain.write_text("\n".join(faulty) + "\n")
    compressed = tmp_path / "comments.zst"
    subprocess.run(
        ["zstd", "-q", "--long=31", "-19", str(plain), "-o", str(compressed)], check=True
    )
    options = ThreadOptions(subreddits=["MovieSuggestions"], include_replies=True)
    source = read_reddit_dump(
        MOVIES / "MovieSuggestions_submissions.zst", compressed,
        dataset="d", source="s", split="train", options=options,
    )  # fmt: skip
    assert source.counters["quarantined.malformed line in comments.zst"] == 3
    assert source.counters["quarantined.duplicate comment id"] == 5
    assert source.counters["quarantined.orphan comment (no submission)"] == 1
    assert source.counters["comments"] == 4804  # every good comment kept, none twice
    assert any("unterminated" in line for line in source.quarantine)


def test_scraped_books_each_comment_is_a_flagged_responder() -> None:
    from remark_data.stages.scrape.reddit_scraped import read_booksuggestions, read_suggestmeabook

    books = read_booksuggestions(
        CORPUS / "reddit/scraped/booksuggestions_2025-07/reddit_booksuggestions_cleaned.json",
        dataset="d", source="s", split="train",
    )  # fmt: skip
    raw = json.loads(
        (
            CORPUS / "reddit/scraped/booksuggestions_2025-07/reddit_booksuggestions_cleaned.json"
        ).read_text()
    )
    distinct = {c["comment_id"]: c["text"] for p in raw for c in p["comments"] if c["text"].strip()}
    assert books.responses.height == len(distinct)
    assert books.requests.height == len({p["reddit_id"] for p in raw})
    assert set(books.responses["responder_flag"]) == {"no_author_ids"}
    smab = read_suggestmeabook(
        CORPUS / "reddit/scraped/suggestmeabook/posts.jsonl", dataset="d", source="s", split="train"
    )
    assert smab.requests.height == 87
    # One comment of the scrape is "[removed]": it says nothing, so it is no responder.
    assert smab.counters["deleted_bodies"] == 1
    assert not smab.responses["text"].str.strip_chars().is_in(["[deleted]", "[removed]"]).any()


def test_plain_ndjson_copy_reads_too(tmp_path) -> None:
    copy = tmp_path / "c.ndjson"
    shutil.copy(MOVIES / "ndjson/MovieSuggestions_comments.ndjson", copy)
    assert (
        read_dump(
            copy, COMMENT_SCHEMA, quarantine=Quarantine(), subreddits=["moviesuggestions"]
        ).height
        == 4804
    )
