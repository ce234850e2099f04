"""The source-format registry: every reader registers its formats; a new format is one reader
module and one line in `formats.READERS`; the shared builders and JSONL reader."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import polars as pl
import pytest

from remark_data.config import load_pipeline_spec
from remark_data.errors import RemarkError
from remark_data.schemas import TABLES, polars_schema
from remark_data.stages.scrape import mentions_table, responses_table
from remark_data.stages.scrape.formats import READERS, SOURCE_FORMATS
from remark_data.stages.scrape.musicrs import read_musicrs
from remark_data.stages.scrape.stage import STAGE
from tests.conftest import REPO


def test_every_reader_registers_its_formats_and_the_digest_covers_only_those_used() -> None:
    assert {record.module for record in SOURCE_FORMATS.values()} == set(READERS)
    for name, record in SOURCE_FORMATS.items():
        assert name in record.names and record.spec.roles
    music = load_pipeline_spec(REPO / "pipelines" / "reddit_music.toml")
    assert STAGE.modules(music) == (
        "remark_data.stages.scrape.musicrs",
        "remark_data.stages.scrape.reddit_dumps",
    )


TOY = '''
"""A toy format: one question per JSONL line, each answer a responder."""

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Literal

import polars as pl

from remark_data.stages.scrape import (
    ScrapedSource, SourceFormat, mentions_table, read_jsonl, requests_table, responses_table,
)
from remark_data.stages.scrape.spec import SourceSpec


class Toy(SourceSpec):
    format: Literal["toy_jsonl"]
    roles: ClassVar[tuple[str, ...]] = ("lines",)
    prefix: str = "toy"


def _read(source: Toy, files: Mapping[str, Path], *, dataset: str) -> ScrapedSource:
    rows = list(read_jsonl(files["lines"], lambda r: (r["q"], r["answers"]), what="a toy line"))
    ids = [f"{source.prefix}-{i}" for i in range(len(rows))]
    answers = pl.DataFrame(
        [(r, f"{r}/{k}", k, a) for r, (_, ans) in zip(ids, rows) for k, a in enumerate(ans)],
        schema=["request_id", "response_id", "responder_index", "answer"],
        orient="row",
    )
    requests = pl.DataFrame({"request_id": ids, "prompt": [q for q, _ in rows]})
    return ScrapedSource(
        requests=requests_table(requests, dataset=dataset, source=source.name, split=source.split),
        responses=responses_table(answers, dataset=dataset, text=pl.col("answer")),
        mentions=mentions_table(
            answers,
            dataset=dataset,
            mention_id=pl.col("response_id") + "#0",
            kind=pl.lit("answer"),
            surface=pl.col("answer"),
        ),
    )


FORMATS = (SourceFormat(spec=Toy, read=_read),)
'''

RUN = """
import json, sys
from pathlib import Path
import remark_data
from remark_data.config import Project, load_pipeline_spec
from remark_data.pipeline import PipelineRun
from remark_data.runner import RunFolder
assert remark_data.__file__.startswith(sys.argv[2]), remark_data.__file__
project = Project(root=Path(sys.argv[1]))
spec = load_pipeline_spec(project.pipeline_path("toy"))
PipelineRun(spec=spec, project=project).run()
labels = RunFolder(project.runs_dir / "toy").read("aggregate", "labels")
print(json.dumps({"format": type(spec.sources[0]).__name__, "prefix": spec.sources[0].prefix,
                  "n_responders": dict(labels.select("request_id", "n_responders").iter_rows())}))
"""


def test_a_new_format_is_one_reader_module_and_one_registration_line(tmp_path) -> None:
    code = tmp_path / "code"
    shutil.copytree(REPO / "remark_data", code / "remark_data")
    scrape = code / "remark_data" / "stages" / "scrape"
    (scrape / "toy.py").write_text(TOY)
    formats = scrape / "formats.py"
    registered = formats.read_text().replace(
        "READERS = (\n", 'READERS = (\n    "remark_data.stages.scrape.toy",\n'
    )
    assert registered != formats.read_text()
    formats.write_text(registered)
    project = tmp_path / "project"
    (project / "pipelines").mkdir(parents=True)
    (project / "data").mkdir()
    lines = project / "toy.jsonl"
    lines.write_text(
        '{"q": "a fruit?", "answers": ["apple", "pear"]}\n{"q": "red?", "answers": []}\n'
    )
    (project / "pipelines" / "toy.toml").write_text(
        textwrap.dedent("""\
        name = "toy"

        [[sources]]
        name = "toys"
        format = "toy_jsonl"
        split = "train"
        paths = { lines = "toy.jsonl" }
        prefix = "t"
        """)
    )
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(project), str(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(code)},
        cwd=code,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result == {"format": "Toy", "prefix": "t", "n_responders": {"t-0": 2}}


def test_jsonl_errors_name_file_and_line(tmp_path) -> None:
    path = tmp_path / "threads.jsonl"
    path.write_text('{"name": "t3_a", "combined_text": "x", "comments": []}\n\n{"name": \n')
    with pytest.raises(RemarkError, match=rf"^{path}:3: malformed JSON") as error:
        read_musicrs(path, dataset="d", source="s", split="train")
    assert isinstance(error.value.__cause__, json.JSONDecodeError)
    path.write_text('{"name": "t3_a", "comments": []}\n')
    with pytest.raises(RemarkError, match=rf"^{path}:1: not a MusiCRS thread") as error:
        read_musicrs(path, dataset="d", source="s", split="train")
    assert isinstance(error.value.__cause__, KeyError)


def test_builders_make_the_tables_columns() -> None:
    answers = pl.DataFrame(
        {"request_id": ["r"], "response_id": ["r/0"], "responder_index": [0], "answer": ["a"]}
    )
    responses = responses_table(answers, dataset="d", text=pl.col("answer"))
    assert responses.schema == polars_schema(TABLES["responses"])
    seen = mentions_table(
        answers.select("request_id", "answer"),
        dataset="d",
        mention_id=pl.lit("r/seen#0"),
        role=pl.lit("seen"),
        kind=pl.lit("answer"),
        surface=pl.col("answer"),
    )
    assert seen.schema == polars_schema(TABLES["mentions"])
    assert seen.row(0, named=True) == {
        "dataset": "d",
        "request_id": "r",
        "response_id": None,
        "responder_index": None,
        "mention_id": "r/seen#0",
        "role": "seen",
        "kind": "answer",
        "surface": "a",
        "year": None,
        "creator": None,
        "stance": "referenced",  # the requester's own titles never enter the union
        "comment_id": None,
        "span_start": None,
        "span_end": None,
        "extractor": "source",
    }
