import json

import polars as pl
import pytest

from remark_data.schemas import TABLES, Label, conform, json_schemas, polars_schema
from tests.conftest import REPO


def test_checked_in_json_schemas_are_current() -> None:
    expected = json_schemas()
    on_disk = {p.name: p.read_text() for p in (REPO / "schemas").glob("*.schema.json")}
    assert on_disk == expected, "schemas/ is stale: run `remark schemas export`"


def test_every_table_has_a_schema_file_with_its_fields() -> None:
    for name, model in TABLES.items():
        schema = json.loads(json_schemas()[f"{name}.schema.json"])
        assert set(schema["properties"]) == set(model.model_fields)


def test_polars_schema_follows_the_models() -> None:
    schema = polars_schema(Label)
    assert schema["n_responders"] == pl.Int64
    assert schema["responder_item_ids"] == pl.List(pl.List(pl.String))
    item = schema["items"].inner  # type: ignore[attr-defined]
    assert dict(item)["year"] == pl.Int64 and dict(item)["p_hat"] == pl.Float64


def test_conform_orders_and_casts_columns_and_rejects_missing_ones() -> None:
    frame = pl.DataFrame(
        {
            "score": [1],
            "status": ["exact"],
            "item_id": ["i"],
            "mention_id": ["m"],
            "request_id": ["r"],
            "dataset": ["d"],
            "reason": [None],
            "response_id": ["x"],
            "responder_index": [0],
            "role": ["response"],
            "stance": ["recommended"],
            "candidates": [None],
            "resolution": [None],
        }
    )
    out = conform(frame, "groundings")
    assert out.columns == list(polars_schema(TABLES["groundings"]))
    assert out["score"].dtype == pl.Float64
    with pytest.raises(ValueError, match=r"missing columns \['reason'\]"):
        conform(frame.drop("reason"), "groundings")


def test_grounding_statuses_are_one_literal() -> None:
    """Every list of grounding statuses derives from `GroundingStatus`: the table's field, the
    statuses that feed the labels, and the methods a spec may name (each is a status)."""
    from typing import get_args

    from remark_data.config import GroundMethod
    from remark_data.schemas import GROUNDING_STATUSES, MATCHED_STATUSES, Grounding

    assert get_args(Grounding.model_fields["status"].annotation) == GROUNDING_STATUSES
    assert (*MATCHED_STATUSES, "unmatched", "ambiguous") == GROUNDING_STATUSES
    assert set(get_args(GroundMethod)) <= set(MATCHED_STATUSES)
    schema = json.loads(json_schemas()["groundings.schema.json"])
    assert tuple(schema["properties"]["status"]["enum"]) == GROUNDING_STATUSES
