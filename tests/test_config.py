import pytest

from remark_data.config import load_pipeline_spec
from remark_data.errors import RemarkError
from tests.conftest import REPO


def test_shipped_specs_load() -> None:
    protoqa = load_pipeline_spec(REPO / "pipelines" / "protoqa.toml")
    assert [s.split for s in protoqa.sources] == ["dev", "dev", "train"]
    assert protoqa.ground.methods == ["exact"]
    reddit = load_pipeline_spec(REPO / "pipelines" / "reddit_v2.toml")
    assert reddit.catalog.format == "rank_grpo_pickle" and reddit.ground.year_tolerance == 2


def _write(tmp_path, text):
    path = tmp_path / "p.toml"
    path.write_text(text)
    return path


SOURCE = (
    '[[sources]]\nname = "s"\nformat = "rank_grpo_rows"\nsplit = "train"\nfiles = { rows = "x" }\n'
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name = "p"\n[[sources]\n', r"p\.toml: malformed TOML: .*line 2"),
        ('name = "p"\ncolour = "red"\n' + SOURCE, r"p\.toml: colour: unknown key$"),
        ('name = "p"\n' + SOURCE + "extra = 1\n", r"p\.toml: sources\.0\.extra: unknown key$"),
        (
            'name = "p"\n' + SOURCE.replace("rank_grpo_rows", "csv"),
            r"p\.toml: sources\.0\.format: Input should be",
        ),
        (
            'name = "p"\n' + SOURCE.replace("rows =", "table ="),
            r"needs files \['rows'\], got \['table'\]",
        ),
        (
            'name = "p"\n[ground]\nyear_tolerance = -1\n' + SOURCE,
            r"ground\.year_tolerance: Input should be greater",
        ),
        ('name = "p"\n', r"p\.toml: sources: Field required$"),
    ],
)
def test_bad_specs_are_one_line_errors_naming_file_and_key(tmp_path, text, message) -> None:
    with pytest.raises(RemarkError, match=message) as info:
        load_pipeline_spec(_write(tmp_path, text))
    assert "\n" not in str(info.value)


def test_missing_spec(tmp_path) -> None:
    with pytest.raises(RemarkError, match="no such pipeline spec"):
        load_pipeline_spec(tmp_path / "nope.toml")
