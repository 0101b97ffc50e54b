"""The lake's column reference (docs/lake-tables.md) is generated from the schema source."""

from __future__ import annotations

from pathlib import Path

from metadata.lake import docs


def test_lake_tables_page_is_generated_from_the_schema():
    page = Path(__file__).resolve().parent.parent / "docs" / "lake-tables.md"
    assert page.read_text() == docs.render(), "run: python -m metadata.lake.docs > docs/lake-tables.md"
