"""What the journal records of a run beside its rows (its `info`): who ran it, where and
how, the plan it paid, the check against the service's own list, the payee findings. The
read side of the same record is `journal.records.RunInfoRecord`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, cast

from batchpay.controls.payees import PayeeChange
from batchpay.journal.records import RunInfoRecord


@dataclass(frozen=True)
class ServiceListCheck:
    """What the check against the service's own payout list read before paying."""

    since: str  # payout_ref matches from then on
    amount_since: str  # account and amount matches from then on ("": none)
    pages: int
    payouts_seen: int
    complete: bool  # each state's list was read back to `since` (not cut by the page cap)


@dataclass(frozen=True)
class RunInfo:
    """What the journal records of a run beside its rows: who ran it, where, how."""

    operator: str
    host: str
    tool_version: str
    service: str
    base_url: str
    key_fingerprint: str
    sandbox: bool
    journal: str
    settings: dict[str, Any]
    plan: Mapping[str, Any]  # an approved plan's id, maker and approvers (controls.plan_file)
    service_list_check: ServiceListCheck | None
    payee_changes: list[PayeeChange]

    def record(self) -> RunInfoRecord:
        """The run's `info` as the journal keeps it: the plan's fields at the top level."""
        info = asdict(self)
        plan, check = info.pop("plan"), info.pop("service_list_check")
        changes = info.pop("payee_changes")
        return cast(RunInfoRecord, {**info, **plan, **({"service_list_check": check} if check
                                                       else {}), "payee_changes": changes})
