"""What every refused query must give: the error at the right place, and exit 2 from the CLI."""

from __future__ import annotations

import pytest

import kleene
from kleene.language.errors import QueryError


def assert_refused(
    text: str,
    needle: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
    kind: type[QueryError] = QueryError,
) -> QueryError:
    """``kleene.compile(text)`` raises ``kind`` saying ``message`` at the first ``needle`` (line
    1, with a caret), and ``kleene explain`` exits 2 printing it; returns the error."""
    from kleene.cli import main

    with pytest.raises(kind) as info:
        kleene.compile(text)
    err = info.value
    assert message in err.message
    assert (err.line, err.column) == (1, text.index(needle) + 1)
    assert "^" in str(err)
    assert main(["explain", text]) == 2
    assert message in capsys.readouterr().err
    return err
