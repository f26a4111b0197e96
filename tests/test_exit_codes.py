"""One rule from row statuses to an exit code (statuses.exit_code): what validate, run,
rerun, a dry run and sync decide, and the codes the CLI exits with."""

from __future__ import annotations

import pytest

from batchpay.statuses import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_ROWS,
    FINE,
    FINE_OR_VALID,
    Status,
    exit_code,
    needs_nothing,
)


def test_the_codes() -> None:
    assert (EXIT_OK, EXIT_ROWS, EXIT_FAILED) == (0, 1, 2)


@pytest.mark.parametrize("status", sorted(FINE))
def test_rows_paid_or_on_their_way_need_nothing(status: str) -> None:
    assert exit_code([status, Status.COMPLETED]) == EXIT_OK
    assert exit_code([status], dry_run=True) == EXIT_OK


@pytest.mark.parametrize("status", sorted(set(Status) - FINE_OR_VALID - {Status.NOT_SENT}))
def test_any_other_row_needs_the_operator(status: str) -> None:
    assert exit_code([Status.COMPLETED, status]) == EXIT_ROWS
    assert exit_code([Status.NOT_SENT, status], dry_run=True) == EXIT_ROWS


def test_not_sent_is_fine_only_in_a_dry_run() -> None:
    assert exit_code([Status.NOT_SENT]) == EXIT_ROWS
    assert exit_code([Status.NOT_SENT], dry_run=True) == EXIT_OK
    assert needs_nothing(dry_run=True) - needs_nothing() == {Status.NOT_SENT}


def test_validate_keeps_its_meaning() -> None:
    assert exit_code([Status.VALID, Status.VALID]) == EXIT_OK  # every row valid
    assert exit_code([Status.VALID, Status.INVALID]) == EXIT_ROWS  # some invalid


def test_statuses_read_back_as_plain_text_and_generators_count() -> None:
    assert exit_code(s for s in ["COMPLETED", "PENDING"]) == EXIT_OK
    assert exit_code(iter(["COMPLETED", "UNKNOWN"])) == EXIT_ROWS
    assert exit_code([]) == EXIT_OK  # no rows: nothing to do (a sheet without rows is refused)
