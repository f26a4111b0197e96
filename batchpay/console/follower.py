"""The console's follower: a paid batch's rows are asked for again until each is final.

A payment ends when its `wait` is over, not when the bank is done: rows may still be
PENDING or PROCESSING, in doubt (UNKNOWN), or FAILED with their refund to come. Nobody
should have to keep the page open and press Refresh statuses for a month: while the console
runs, this thread does what that button does (`payment.refresh`, i.e. `batchpay sync` of the
batch's run) for each paid batch that still has such rows, until every sent row is
COMPLETED or REFUNDED: a round every `every` seconds, each batch asked for after 1, 2, 4 ...
rounds (at most hourly), since a refund may take days and each refresh spends requests.
Webhooks, where the service sends them, settle rows sooner; the follower is what settles
them when none come.

It runs with the served app (its lifespan), never in a test client that does not serve; a
refresh that cannot run now (a payment holds the journal, the service does not answer) is
tried again next time, and never stops the console.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from batchpay.console import payment
from batchpay.console.batches import Batch, Batches, Stage
from batchpay.errors import BatchpayError
from batchpay.serving import Rounds
from batchpay.settings.model import Settings

log = logging.getLogger("batchpay.console")
FOLLOW_SECONDS = 60.0  # between two rounds; each round costs a few list reads per batch
LONGEST_WAIT = 3600.0  # a batch is asked for again after 1, 2, 4 ... rounds, at most hourly


class Follower(Rounds):
    name = "follower"

    def __init__(self, settings: Settings, batches: Batches, every: float = FOLLOW_SECONDS,
                 refresh: Callable[[Settings, Batches, Batch], object] = payment.refresh
                 ) -> None:
        super().__init__(every)
        self.settings, self.batches = settings, batches
        self._refresh = refresh
        # batch id → (when it is due again, the wait after that): a refund can take days,
        # and every refresh spends the service's request budget
        self._due: dict[str, tuple[float, float]] = {}

    def stop(self) -> None:
        super().stop()
        self.batches.stop_following()

    def round(self) -> int:
        """One pass over the paid batches; how many were refreshed."""
        done = 0
        if not self.batches.follows_here():  # another console of the team follows them
            return 0
        for batch in self.batches.all():
            if self.stopping:
                break
            if batch.stage != Stage.PAID or batch.meta.get("followed"):
                continue
            try:
                if payment.not_final(self.settings, batch) == 0:
                    self.batches.update(batch.id, followed=True)
                    continue
                due, wait = self._due.get(batch.id, (0.0, self.every))
                if time.monotonic() < due:
                    continue
                with payment.FOLLOWING:
                    if payment.paying_here():
                        break  # a payment holds the journal: the next round
                    self._refresh(self.settings, self.batches, batch)
                self._due[batch.id] = (time.monotonic() + wait - self.every / 2,
                                       min(2 * wait, LONGEST_WAIT))
                done += 1
            except BatchpayError as exc:  # the journal busy, the service away: next round
                log.info("following batch %s: %s", batch.id, exc.message)
            except Exception:  # a thread's last line: logged, the next round tries again
                log.exception("following batch %s failed", batch.id)
        return done
