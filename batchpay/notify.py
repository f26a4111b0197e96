"""Delivering notifications: the apprise sender, and the worker that `batchpay serve` runs.

What a notification says and to whom it is queued is the engine's (batchpay.engine.notices);
here one leaves through apprise (one receiver per call, so that each receiver's record says
whether it got it), and the worker delivers what is due every few seconds while the console
runs. A receiver that is down makes the worker log a line and try again later; it never
stops the console and never touches a payment.
"""

from __future__ import annotations

import logging
from pathlib import Path

from batchpay.engine import Delivery, Journal, NoticeFailed, deliver_notices
from batchpay.errors import BatchpayError
from batchpay.serving import Rounds
from batchpay.settings.model import DatabaseURL

log = logging.getLogger("batchpay.notify")
EVERY = 10.0  # seconds between two delivery rounds of the console's worker


def send(url: str, title: str, body: str) -> None:
    """Deliver one notification to one apprise URL; NoticeFailed with apprise's own words."""
    import apprise

    service = apprise.Apprise()
    if not service.add(url):
        raise NoticeFailed("not a notification URL apprise can use", retry=False)
    with apprise.LogCapture(level=logging.WARNING) as said:  # type: ignore[no-untyped-call]
        ok = service.notify(title=title, body=body)
    if not ok:
        words = [line.strip() for line in said.getvalue().splitlines() if line.strip()]
        raise NoticeFailed(words[-1] if words else "the receiver did not take it")


def deliver_now(journal_at: Path | DatabaseURL, notify: tuple[str, ...], *,
                everything: bool = False) -> Delivery:
    """One delivery round on the journal at `journal_at` (none there yet: nothing queued)."""
    if not isinstance(journal_at, DatabaseURL) and not Path(journal_at).is_file():
        return Delivery()
    with Journal(journal_at) as journal:
        return deliver_notices(journal, notify, send, everything=everything)


class NoticeWorker(Rounds):
    """Delivers due notifications every `every` seconds in a thread of its own."""

    name = "notify"

    def __init__(self, journal_at: Path | DatabaseURL, notify: tuple[str, ...],
                 every: float = EVERY) -> None:
        super().__init__(every)
        self.journal_at, self.notify = journal_at, notify

    def wanted(self) -> bool:
        return bool(self.notify)

    def round(self) -> Delivery | None:
        try:
            return deliver_now(self.journal_at, self.notify)
        except BatchpayError as exc:  # the journal busy or away: the next round
            log.info("delivering notifications: %s", exc.message)
        except Exception:  # a thread's last line: logged, the next round tries again
            log.exception("delivering notifications failed")
        return None
