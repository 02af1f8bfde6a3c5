"""read_df for Spark 3.5 (being built)."""

from __future__ import annotations

from typing import Any


def read_df(spark: Any, path: str, **options: Any) -> Any:
    raise NotImplementedError("rstore.spark: read_df is being built")
