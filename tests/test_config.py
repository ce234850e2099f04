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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (SOURCE.replace('format = "rank_grpo_rows"\n', ""), r"sources\.0\.format: Field required$"),
        (SOURCE + 'bots = ["x"]\n', r"p\.toml: sources\.0\.bots: unknown key$"),
        (
            SOURCE.replace("rank_grpo_rows", "reddit_dump").replace(
                'rows = "x"', 'submissions = "s", comments = "c"'
            )
            + 'since = "soon"\n',
            r"p\.toml: sources\.0\.since: Input should be a valid date",
        ),
        (SOURCE + '[catalog]\nformat = "csv"\n', r"p\.toml: catalog\.format: Input should be"),
        (
            SOURCE + '[catalog]\nformat = "goodbooks"\nfiles = { book = "x" }\n',
            r"p\.toml: catalog: .*format 'goodbooks' needs files \['books'\], got \['book'\]$",
        ),
        (SOURCE + '[catalog]\nfiles = { books = "x" }\n', r"format 'none' needs files \[\]"),
    ],
)
def test_each_format_checks_its_own_options_and_files(tmp_path, text, message) -> None:
    with pytest.raises(RemarkError, match=message) as info:
        load_pipeline_spec(_write(tmp_path, 'name = "p"\n' + text))
    assert "\n" not in str(info.value)


def test_specs_are_the_registered_format_models() -> None:
    from remark_data.stages.ground.catalogs import MusicCatalog, NoCatalog
    from remark_data.stages.scrape.musicrs import MusiCRS
    from remark_data.stages.scrape.reddit_dumps import RedditDump

    music = load_pipeline_spec(REPO / "pipelines" / "reddit_music.toml")
    assert [type(s) for s in music.sources] == [MusiCRS, RedditDump]
    assert music.sources[1].subreddits == ["ifyoulikeblank"]
    assert isinstance(music.catalog, MusicCatalog)
    assert isinstance(load_pipeline_spec(REPO / "pipelines" / "protoqa.toml").catalog, NoCatalog)
