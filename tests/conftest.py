"""Shared fixtures, and the layout: one folder per package of src/kleene, plus
``differential/`` (engine against oracle), ``spark/`` (marked ``spark``: a real
local SparkSession) and ``bench/`` (the benchmark harnesses on small data).
Helpers shared across folders live here at the top: ``generators`` (Hypothesis
strategies for queries and streams), ``against_oracle``, ``paper_cases``,
``condition_cases``.

``spark`` is one local SparkSession (``local[2]``) for the whole test run:
starting the JVM costs 8-30 s here, so every Spark test (batch and
streaming) reuses it.  It is created on first use only, so runs that select
no Spark test never start a JVM.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# The same examples on every run (a hash of each test), so that a run of the suite, CI's
# included, is reproducible and the aimed shares (against_oracle.aimed) are judged on a fixed
# sample; KLEENE_HYPOTHESIS=explore draws new examples each run, to look for new failures.
settings.register_profile("fixed", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("KLEENE_HYPOTHESIS", "fixed"))


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


SPARK_DIR = Path(__file__).resolve().parent / "spark"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/spark/ needs Java and pyspark: ``-m "not spark"`` leaves it out
    (the README's test command runs it)."""
    for item in items:
        if SPARK_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.spark)


def pytest_configure(config: pytest.Config) -> None:
    # PySpark warns on every Arrow UDF that it prefers pandas < 3; kleene's
    # Spark path uses Arrow only, so the warning says nothing about our code.
    config.addinivalue_line(
        "filterwarnings", "ignore:PySpark does not yet fully support pandas:FutureWarning"
    )
    # Generated queries name event types their random streams often lack: each such run warns
    # (kleene.UnseenNameWarning). tests/api/test_unseen_names.py checks the warnings themselves.
    config.addinivalue_line("filterwarnings", "ignore::kleene.UnseenNameWarning")


@pytest.fixture(params=["compiled", "pure"])
def twins(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with the compiled twins of the hot loops, then with their pure-Python
    originals (kleene/native.py); the compiled run is skipped where they were not built."""
    from kleene.io import jsonl_bulk
    from kleene.runtime import engine, enumeration, evaluator

    if request.param == "compiled":
        if (enumeration._compiled is None or jsonl_bulk._jsonl is None or evaluator._compiled is None
                or engine.LOOP is None):
            pytest.skip("the compiled twins are not built here")
    else:
        monkeypatch.setattr(engine, "LOOP", None)
        monkeypatch.setattr(evaluator.Evaluator, "step", evaluator.PURE_STEP)
        monkeypatch.setattr(enumeration.Columns, "add_node", enumeration.PURE_ADD_NODE)
        monkeypatch.setattr(jsonl_bulk, "_jsonl", None)
    return str(request.param)
