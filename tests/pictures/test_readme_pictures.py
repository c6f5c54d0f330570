"""The README's pictures (``make pictures``) exist, are readable, and show the demo's query."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402

import kleene  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"


def test_the_automaton_picture_is_the_demo_query_automaton() -> None:
    root = ET.parse(IMAGES / "automaton.svg").getroot()
    texts = {t.text for t in root.iter() if t.tag.endswith("text") and t.text}
    q = kleene.compile((ROOT / "examples" / "stock.ceql").read_text(), time_column="time")
    dot = q.automaton_dot()
    for label in ("SELL as a [(name == 'MSFT') AND (price > 100)] •", "BUY as b [name == 'INTC'] •", "TRUE ◦"):
        assert label in dot and label in texts, label
    assert "WITHIN 10 seconds" in texts


def test_the_timeline_picture() -> None:
    image = mpimg.imread(IMAGES / "timeline.png")
    height, width = image.shape[:2]
    assert width >= 1200 and 300 <= height <= width and image.std() > 0.05


def test_the_readme_shows_both() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/images/automaton.svg)" in readme and "(docs/images/timeline.png)" in readme
    makefile = (ROOT / "Makefile").read_text()
    assert "docs/images/automaton.svg" in makefile and "docs/images/timeline.png" in makefile
