"""The generated pydantic record models: up to date with the schema, and they read every payload."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from metadata import docs, gen_models
from metadata.models import MODELS
from metadata.schema import control_specs, metadata_specs
from tests.recordgen import body

SPECS = [(s, v) for s in (*metadata_specs().values(), *control_specs().values())
         for v in range(s.valid_versions.low, s.valid_versions.high + 1)]


def test_models_module_is_generated_from_the_schema():
    assert gen_models.TARGET.read_text() == gen_models.render(), "run: python -m metadata.gen_models"


def test_lake_tables_page_is_generated_from_the_schema():
    page = Path(__file__).resolve().parent.parent / "docs" / "lake-tables.md"
    assert page.read_text() == docs.render(), "run: python -m metadata.docs > docs/lake-tables.md"


def test_every_record_type_has_a_model():
    assert set(MODELS) == {s.type_name for s, _ in SPECS}


@pytest.mark.parametrize("spec,version", SPECS, ids=[f"{s.type_name}-v{v}" for s, v in SPECS])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_models_read_and_write_every_payload(spec, version, data):
    payload = data.draw(body(spec, version))
    model = MODELS[spec.type_name].model_validate(payload)
    assert model.model_dump(by_alias=True, exclude_unset=True) == payload


def test_models_reject_out_of_range_values():
    with pytest.raises(ValidationError):
        MODELS["FEATURE_LEVEL_RECORD"].model_validate({"name": "x", "featureLevel": 40000})
