"""A run's `info` is spelled once: `RunInfo` (what a run writes when it starts) has one
field per key of `RunStartInfo` (what the journal's readers read), but `plan`, whose keys
are an approved plan's `PlanRunInfo`. A fact added on one side only fails here; and what
`record()` writes is, byte for byte, the JSON a journal written at schema 2 holds."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, cast

from batchpay.controls.plan_file import PlanRunInfo
from batchpay.engine.run_info import RunInfo, ServiceListCheck
from batchpay.journal.records import RunInfoRecord, RunStartInfo, canonical

OLD_JOURNAL = Path(__file__).parents[1] / "journal" / "data" / "schema2-journal.sql"


def keys_of(typed: Any) -> set[str]:
    """A TypedDict's keys, its bases' included."""
    return set(typed.__required_keys__ | typed.__optional_keys__)


def written_keys(written: Any) -> set[str]:
    """The keys a RunInfo-shaped dataclass writes: a key per field, the plan's instead of
    `plan`."""
    return {f.name for f in fields(written)} - {"plan"} | keys_of(PlanRunInfo)


def spelling_gaps(written: Any, read: Any) -> list[str]:
    """The facts one side spells and the other does not."""
    mine, theirs = written_keys(written), keys_of(read)
    return ([f"{k}: written, never read" for k in sorted(mine - theirs)]
            + [f"{k}: read, never written" for k in sorted(theirs - mine)])


def old_infos() -> list[dict[str, Any]]:
    """The `info` each run of the schema-2 journal recorded when it started (run.started)."""
    db = sqlite3.connect(":memory:")
    db.executescript(OLD_JOURNAL.read_text(encoding="utf-8"))
    found = [json.loads(data)["info"] for (data,) in db.execute(
        "SELECT data FROM events WHERE kind = 'run.started' ORDER BY seq")]
    db.close()
    return found


def as_run_info(info: dict[str, Any], plan: PlanRunInfo | None = None) -> RunInfo:
    """A RunInfo with what a stored `info` says (its plan apart)."""
    check = info.get("service_list_check")
    return RunInfo(**{k: v for k, v in info.items()
                      if k not in ("service_list_check", *keys_of(PlanRunInfo))},
                   plan=plan, service_list_check=cast(ServiceListCheck, check) if check else None)


def test_each_field_of_run_info_is_a_key_the_journal_reads_and_back() -> None:
    assert spelling_gaps(RunInfo, RunStartInfo) == []
    # the read side is the start's keys and what the run's end adds
    assert keys_of(RunStartInfo) < keys_of(RunInfoRecord)


def test_a_fact_added_on_one_side_only_fails() -> None:
    @dataclass(frozen=True)
    class Wider(RunInfo):
        region: str = ""

    class Narrower(RunStartInfo, total=False):
        region: str

    assert spelling_gaps(Wider, RunStartInfo) == ["region: written, never read"]
    assert spelling_gaps(RunInfo, Narrower) == ["region: read, never written"]
    assert spelling_gaps(Wider, Narrower) == []
    # and what record() writes carries the new field too
    wider = Wider(**{f.name: getattr(as_run_info(old_infos()[0]), f.name)
                     for f in fields(RunInfo)}, region="EU")
    assert set(wider.record()) - keys_of(RunStartInfo) == {"region"}


def test_record_writes_the_json_an_older_journal_holds() -> None:
    infos = old_infos()
    assert len(infos) == 2
    for info in infos:
        assert set(info) <= keys_of(RunStartInfo)
        assert canonical(as_run_info(info).record()) == canonical(info)


def test_an_approved_plans_keys_go_at_the_top_level_and_no_plan_writes_none() -> None:
    info = old_infos()[0]
    plan: PlanRunInfo = {"plan_id": "ab" * 32, "plan_maker": "mia (SHA256:x), mia@pc",
                         "plan_approvers": "abe (SHA256:y)"}
    recorded = as_run_info(info, plan).record()
    assert set(recorded) == keys_of(RunStartInfo)
    assert {k: recorded.get(k) for k in plan} == plan
    plain = {k: v for k, v in info.items() if k != "service_list_check"}
    assert as_run_info(plain).record() == plain  # neither plan_ keys nor a check
