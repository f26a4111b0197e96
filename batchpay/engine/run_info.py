"""What the journal records of a run beside its rows (its `info`): who ran it, where and
how, the plan it paid, the check against the service's own list, the payee findings.

One spelling per fact: the keys are `journal.records.RunStartInfo`'s (the read side,
`RunInfoRecord`, extends it with what the run's end adds), and `RunInfo` has one field per
key, but `plan`, whose three keys go at the top level. A test holds the fields to the keys,
and `record()` is held to the JSON older journals store."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, cast

from batchpay.controls.payees import PayeeChange
from batchpay.controls.plan_file import PlanRunInfo
from batchpay.journal.records import RunInfoRecord
from batchpay.journal.records import ServiceListCheck as ServiceListCheck  # the runner makes one


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
    plan: PlanRunInfo | None  # an approved plan's id, maker and approvers (controls.plan_file)
    service_list_check: ServiceListCheck | None  # None: the service's list was not read
    payee_changes: list[PayeeChange]

    def record(self) -> RunInfoRecord:
        """The run's `info` as the journal keeps it when the run starts (RunStartInfo's
        keys): the plan's fields at the top level; no plan, no plan_ keys; no payout list
        read, no service_list_check."""
        info = asdict(self)
        plan, check = info.pop("plan") or {}, info.pop("service_list_check")
        return cast(RunInfoRecord, {**info, **plan,
                                    **({"service_list_check": check} if check else {})})
