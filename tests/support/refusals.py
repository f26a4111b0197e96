"""A sheet refused before parsing: an InputError of one line, and quickly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from batchpay.errors import InputError
from batchpay.sheet.read import read_sheet


def refused(path: Path, **kwargs: object) -> InputError:
    started = time.perf_counter()
    with pytest.raises(InputError) as caught:
        read_sheet(path, **kwargs)  # type: ignore[arg-type]
    assert time.perf_counter() - started < 2.0, "refusing must be fast"
    assert "\n" not in caught.value.message
    return caught.value
