"""The one status vocabulary: the groups keep the relations the rules rely on, the README's
table lists exactly the statuses, and the module stays at the bottom of the house."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from batchpay.sheet.outcomes import CONTROL_TOTALS
from batchpay.statuses import (
    FAILED_AT_BANK,
    FINAL,
    FINE,
    FINE_OR_VALID,
    IN_DOUBT,
    MAY_CHANGE,
    MAY_HAVE_PAID,
    NO_PAYOUT,
    ON_ITS_WAY,
    REQUESTED,
    SENDING,
    SENT,
    SERVICE_ALIASES,
    SERVICE_STATES,
    UNSENT,
    Status,
    in_order,
)

ROOT = Path(__file__).resolve().parents[1]
ALL = frozenset(Status)
# what a payout_ref's ledger row can say: SENDING, and every status but the row-only ones
LEDGER = frozenset({SENDING}) | (ALL - {Status.VALID, Status.INVALID, Status.HELD})


def readme_statuses() -> set[str]:
    """The statuses in the first column of the README's table under `## Statuses`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Statuses\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    found = {name for row in rows for name in re.findall(r"`([A-Z_]+)`", row.split("|")[1])}
    assert len(found) >= 10, section
    return found


def test_the_readme_table_lists_exactly_the_statuses() -> None:
    assert readme_statuses() == {s.value for s in Status}


def test_a_status_is_its_own_text() -> None:
    # the journal and the workbooks hold plain text: it must find the member and its groups
    for status in Status:
        assert status == status.value == status.name == str(status) == f"{status}"
        assert hash(status) == hash(status.value)
        assert status.value in FINE_OR_VALID | SENT | UNSENT | {Status.INVALID}


def test_sending_is_ledger_only_and_shows_in_doubt() -> None:
    assert SENDING not in {s.value for s in Status}
    assert {SENDING, Status.UNKNOWN} == IN_DOUBT


def test_control_totals_split_every_valid_row_into_sent_or_not_sent() -> None:
    assert not SENT & UNSENT
    assert ALL - {Status.INVALID} == SENT | UNSENT
    assert CONTROL_TOTALS == (
        "valid = sent + not sent, where not sent = NOT_SENT + QUOTE_FAILED + REJECTED + HELD"
        " and sent = PENDING + PROCESSING + COMPLETED + FAILED + REFUNDED + UNKNOWN")


def test_the_service_states() -> None:
    assert FINAL <= SERVICE_STATES and ON_ITS_WAY <= SERVICE_STATES
    assert ON_ITS_WAY | FINAL == SERVICE_STATES and not ON_ITS_WAY & FINAL
    assert {Status.UNKNOWN} == SENT - SERVICE_STATES
    assert set(SERVICE_ALIASES.values()) <= SERVICE_STATES
    assert not set(SERVICE_ALIASES) & {s.value for s in Status}
    assert SERVICE_ALIASES["INITIATED"] == Status.PENDING


def test_every_final_status_is_sent() -> None:
    assert FINAL <= SENT
    assert FAILED_AT_BANK <= FINAL


def test_fine_rows_are_sent_and_not_failed() -> None:
    assert FINE <= SENT
    assert not FINE & FAILED_AT_BANK and Status.UNKNOWN not in FINE
    assert {Status.VALID} == FINE_OR_VALID - FINE


@pytest.mark.parametrize("group", [NO_PAYOUT, IN_DOUBT, REQUESTED, MAY_HAVE_PAID, MAY_CHANGE])
def test_ledger_groups_hold_ledger_statuses_only(group: frozenset[str]) -> None:
    assert group <= LEDGER


def test_a_ref_without_a_payout_is_sent_afresh_and_one_in_doubt_never() -> None:
    assert NO_PAYOUT <= UNSENT
    # the control totals' not sent also counts rows that never reach the ledger
    assert {Status.VALID, Status.HELD} == UNSENT - NO_PAYOUT
    assert not NO_PAYOUT & REQUESTED
    assert not NO_PAYOUT & IN_DOUBT
    assert IN_DOUBT <= REQUESTED and SENT <= REQUESTED


def test_money_that_went_or_may_have() -> None:
    assert MAY_HAVE_PAID == REQUESTED - FAILED_AT_BANK
    assert IN_DOUBT <= MAY_HAVE_PAID


def test_sync_follows_what_the_service_may_still_change() -> None:
    assert IN_DOUBT <= MAY_CHANGE and ON_ITS_WAY <= MAY_CHANGE
    assert Status.FAILED in MAY_CHANGE  # it still becomes REFUNDED
    assert not MAY_CHANGE & {Status.COMPLETED, Status.REFUNDED}


def test_in_order_follows_the_status_order() -> None:
    assert in_order(SENT) == (Status.PENDING, Status.PROCESSING, Status.COMPLETED,
                              Status.FAILED, Status.REFUNDED, Status.UNKNOWN)
    assert in_order(["UNKNOWN", "VALID", "SOMETHING", SENDING]) == (Status.VALID,
                                                                  Status.UNKNOWN)


def _imported(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_statuses_imports_nothing_from_batchpay_and_the_sheet_no_engine() -> None:
    assert not {m for m in _imported(ROOT / "batchpay" / "statuses.py")
                if m.split(".")[0] == "batchpay"}
    for path in sorted((ROOT / "batchpay" / "sheet").glob("*.py")):
        wrong = {m for m in _imported(path)
                 if m.startswith(("batchpay.engine", "batchpay.provider"))}
        assert not wrong, f"{path.name} imports {wrong}"


def test_every_status_has_one_tone_so_the_workbook_and_the_terminal_colour_it_alike() -> None:
    from batchpay.display import STATUS_STYLE
    from batchpay.sheet.results import _STATUS_COLOURS
    from batchpay.statuses import TONES

    assert sorted(s for members in TONES.values() for s in members) == sorted(Status)
    assert set(STATUS_STYLE) == set(_STATUS_COLOURS) == set(Status)
    for members in TONES.values():
        assert len({STATUS_STYLE[s] for s in members}) == 1
        assert len({_STATUS_COLOURS[s] for s in members}) == 1
