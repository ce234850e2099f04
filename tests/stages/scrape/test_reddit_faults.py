"""Faulty Reddit dumps derived from the real files: cut or corrupt archives end in one-line
errors naming the offset; records that would make up responders are quarantined."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

from remark_data.errors import RemarkError
from remark_data.stages.scrape.dumps import Quarantine, read_dump
from remark_data.stages.scrape.reddit_dumps import COMMENT_SCHEMA, ThreadOptions, read_reddit_dump
from tests.conftest import CORPUS, REPO

MOVIES = CORPUS / "reddit/dumps/moviesuggestions_2020-09"
ASK = CORPUS / "reddit/dumps/askreddit_magical_movies_2021-04"
COMMENTS_ZST = MOVIES / "MovieSuggestions_comments.zst"
SUBMISSIONS_ZST = MOVIES / "MovieSuggestions_submissions.zst"
ASK_GZ = ASK / "AskReddit_mx0pwd_comments.ndjson.gz"


def _cut(source: Path, tmp_path: Path, fraction: float = 0.5) -> Path:
    data = source.read_bytes()
    cut = tmp_path / f"cut{''.join(source.suffixes)}"
    cut.write_bytes(data[: int(len(data) * fraction)])
    return cut


def _flipped(source: Path, tmp_path: Path) -> Path:
    data = bytearray(source.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    corrupt = tmp_path / f"corrupt{''.join(source.suffixes)}"
    corrupt.write_bytes(bytes(data))
    return corrupt


def _read(path: Path) -> pl.DataFrame:
    return read_dump(path, COMMENT_SCHEMA, quarantine=Quarantine())


def test_truncated_zst_is_an_error_naming_the_offset(tmp_path) -> None:
    cut = _cut(COMMENTS_ZST, tmp_path)
    size = cut.stat().st_size
    with pytest.raises(RemarkError, match=rf"truncated zstd .*compressed byte {size}\b") as error:
        _read(cut)
    assert str(cut) in str(error.value) and "\n" not in str(error.value)
    assert error.value.__cause__ is not None
    # Cut inside the first bytes (the frame header) too.
    with pytest.raises(RemarkError, match="truncated zstd"):
        _read(_cut(COMMENTS_ZST, tmp_path, 0.00001))


def test_truncated_zst_fails_the_dump_reader_instead_of_shrinking_it(tmp_path) -> None:
    options = ThreadOptions(subreddits=["MovieSuggestions"])
    with pytest.raises(RemarkError, match="truncated zstd"):
        read_reddit_dump(
            SUBMISSIONS_ZST, _cut(COMMENTS_ZST, tmp_path),
            dataset="d", source="s", split="train", options=options,
        )  # fmt: skip


def test_corrupt_zst_is_a_one_line_error(tmp_path) -> None:
    corrupt = _flipped(COMMENTS_ZST, tmp_path)
    with pytest.raises(
        RemarkError, match=r"corrupt zstd data: reading failed at compressed byte \d+"
    ):
        _read(corrupt)
    garbage = tmp_path / "garbage.zst"
    garbage.write_bytes(COMMENTS_ZST.read_bytes() + b"not a frame")
    with pytest.raises(RemarkError, match=rf"compressed byte {COMMENTS_ZST.stat().st_size}\b"):
        _read(garbage)


def test_concatenated_zst_frames_are_all_read(tmp_path) -> None:
    twice = tmp_path / "twice.zst"
    twice.write_bytes(COMMENTS_ZST.read_bytes() * 2)
    assert _read(twice).height == 2 * 4804


def test_truncated_and_corrupt_gz_are_errors(tmp_path) -> None:
    cut = _cut(ASK_GZ, tmp_path)
    with pytest.raises(
        RemarkError, match=rf"truncated gzip .*compressed byte {cut.stat().st_size}"
    ):
        _read(cut)
    with pytest.raises(RemarkError, match=r"corrupt gzip data: reading failed at compressed byte"):
        _read(_flipped(ASK_GZ, tmp_path))


def test_cli_reports_a_cut_dump_in_one_line(tmp_path) -> None:
    """The run that used to exit 0 with 40 % of the comments now exits 2 with one line."""
    project = tmp_path / "project"
    (project / "pipelines").mkdir(parents=True)
    (project / "data").mkdir()
    (project / "data/sources.toml").write_text((REPO / "data/sources.toml").read_text())
    cut = _cut(COMMENTS_ZST, tmp_path)
    (project / "pipelines/cut_movies.toml").write_text(
        textwrap.dedent(f"""\
        name = "cut_movies"
        description = "r/MovieSuggestions with a cut comments dump"

        [[sources]]
        name = "cut"
        format = "reddit_dump"
        split = "train"
        files = {{ submissions = "reddit-moviesuggestions-submissions" }}
        paths = {{ comments = "{cut}" }}
        subreddits = ["MovieSuggestions"]
        """)
    )
    result = subprocess.run(
        [sys.executable, "-c", "from remark_data.cli import main; main()",
         "--project-dir", str(project), "--mirror", str(CORPUS),
         "run", "cut_movies", "--stage", "scrape"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "truncated zstd" in result.stderr and "Traceback" not in result.stderr


def _fault_comments(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The real comments with an int author, an object author, no id, and authors whose only
    comments are "[deleted]" / "[removed]"; returns the file and the names to look for."""
    records = [json.loads(line) for line in (MOVIES / "ndjson/MovieSuggestions_comments.ndjson")
               .read_text().splitlines()]  # fmt: skip
    usable = [
        i
        for i, c in enumerate(records)
        if c["author"] != "[deleted]" and not c["is_submitter"] and c["author"] != "AutoModerator"
    ]
    names = {"no_id": "fault_no_id", "deleted": "fault_only_deleted", "removed": "fault_removed"}
    records[usable[0]]["author"] = 1234567
    records[usable[1]]["author"] = {"name": "fault_object"}
    records[usable[2]] |= {"author": names["no_id"]}
    del records[usable[2]]["id"]
    records[usable[3]] |= {"author": names["deleted"], "body": "[deleted]"}
    records[usable[4]] |= {"author": names["removed"], "body": " [removed]\n"}
    path = tmp_path / "comments.ndjson"
    path.write_text("".join(json.dumps(c) + "\n" for c in records))
    return path, names


def test_bad_authors_ids_and_deleted_bodies_make_no_responder(tmp_path) -> None:
    path, names = _fault_comments(tmp_path)
    options = ThreadOptions(subreddits=["MovieSuggestions"], include_replies=True)
    source = read_reddit_dump(
        SUBMISSIONS_ZST, path, dataset="d", source="s", split="train", options=options
    )
    stats = source.counters
    assert stats["quarantined.non-string author in comments.ndjson"] == 2
    assert stats["quarantined.comment without id"] == 1
    assert "quarantined.malformed line in comments.ndjson" not in stats
    assert stats["deleted_bodies"] == 115 + 2  # the real file's 115 plus ours
    assert stats["comments"] == 4804 - 3
    responders = set(source.responses["responder_id"])
    assert not {"1234567", '{"name": "fault_object"}', *names.values()} & responders
    assert any("1234567" in sample for sample in source.quarantine)
    assert any("fault_no_id" in sample for sample in source.quarantine)


def test_non_string_author_found_in_a_zst_block_polars_would_accept(tmp_path) -> None:
    """polars casts 123 to "123" without complaint: the block must still go line by line."""
    path, _ = _fault_comments(tmp_path)
    compressed = tmp_path / "comments.zst"
    subprocess.run(["zstd", "-q", "--long=31", str(path), "-o", str(compressed)], check=True)
    quarantine = Quarantine()
    frame = read_dump(compressed, COMMENT_SCHEMA, quarantine=quarantine)
    assert quarantine.counts == {"non-string author in comments.zst": 2}
    assert frame.height == 4804 - 2
    assert frame["id"].null_count() == 1  # quarantined later, with the thread context
