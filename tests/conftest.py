"""Shared fixtures.

``spark`` is one local SparkSession (``local[2]``) for the whole test run:
starting the JVM costs 8-30 s here, so every Spark test (batch and
streaming) reuses it.  It is created on first use only, so runs that select
no Spark test never start a JVM.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kleene.spark.session import local_session

    session = local_session(
        "local[2]",
        app_name="kleene-tests",
        **{"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "2g"},
    )
    yield session
    session.stop()


def pytest_configure(config: pytest.Config) -> None:
    # PySpark warns on every Arrow UDF that it prefers pandas < 3; kleene's
    # Spark path uses Arrow only, so the warning says nothing about our code.
    config.addinivalue_line(
        "filterwarnings", "ignore:PySpark does not yet fully support pandas:FutureWarning"
    )


@pytest.fixture(params=["compiled", "pure"])
def twins(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with the compiled twins of the hot loops, then with their pure-Python
    originals (kleene/native.py); the compiled run is skipped where they were not built."""
    from kleene.io import writers
    from kleene.runtime import enumeration, evaluator

    if request.param == "compiled":
        if enumeration._compiled is None or writers._jsonl is None or evaluator._compiled is None:
            pytest.skip("the compiled twins are not built here")
    else:
        monkeypatch.setattr(evaluator.Evaluator, "step", evaluator.PURE_STEP)
        monkeypatch.setattr(enumeration.Columns, "add_node", enumeration.PURE_ADD_NODE)
        monkeypatch.setattr(writers, "_jsonl", None)
    return str(request.param)
