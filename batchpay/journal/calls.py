"""A journal call waiting to be written with others (batchpay.journal.grouped), and what
it came to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Call:
    """One journal call waiting to be written: `work(*args, **kwargs)`."""

    work: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] | None = None
    durable: bool = False  # must survive a power cut once reported (an intent)


@dataclass(frozen=True)
class Outcome:
    """What one call returned, or the error it raised."""

    value: Any = None
    error: BaseException | None = None
