"""`batchpay plan`: a dry run of the sheet, written for approval (batchpay.controls.approval).

    the maker's key, listed for making plans ─► dry run (quotes, holds, wallets) ─► the rows
        that would be sent ─► NAME.plan.json (canonical; its SHA-256 is the plan id) ─►
        NAME.plan.json.maker.sig (the maker's signature) ─► NAME.plan.xlsx (the dry run's
        workbook with the plan's id, short code and totals on its Run sheet)

No plan is written when no row would be sent or the wallets cannot cover the batch; nothing
at all when the maker's key is not one the approvers file lists for making plans.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import TypedDict

from batchpay.controls.approval import summary_lines
from batchpay.controls.plan_checks import CurrencyFigures, PlanDocument
from batchpay.controls.plan_file import (
    Maker,
    build_plan,
    canonical_bytes,
    maker_signature_path,
    plan_rows_of,
    read_plan,
    short_code,
    sign_as_maker,
    signature_paths,
)
from batchpay.engine.paying import Reporter
from batchpay.engine.render import find_run, render_run, result_rows
from batchpay.engine.runner import RunOptions, RunOutcome, load_input, run_batch
from batchpay.files import replaced_atomically
from batchpay.journal.store import Journal
from batchpay.service import Opener
from batchpay.settings.model import Settings
from batchpay.sheet.rates import rates_of
from batchpay.sheet.read import Sheet
from batchpay.sheet.results_input import is_results_workbook
from batchpay.sheet.validate import Validation


@dataclass(frozen=True)
class PlanFiles:
    """NAME.plan.json and NAME.plan.xlsx."""

    plan: Path
    workbook: Path

    @property
    def maker_signature(self) -> Path:
        return maker_signature_path(self.plan)

    @classmethod
    def named(cls, sheet: Path, name: Path | None = None) -> PlanFiles:
        """From `--out NAME` (with or without .plan/.plan.json), else the sheet's name as it
        is: the plan of `x.plan.xlsx` is `x.plan.plan.json`, its workbook never the sheet."""
        if name is None:
            base = sheet.with_suffix("")
        else:
            base = name.with_name(name.name.removesuffix(".plan.json").removesuffix(".plan"))
        return cls(base.with_name(base.name + ".plan.json"),
                   base.with_name(base.name + ".plan.xlsx"))


class PlanMade(TypedDict):
    """What `batchpay plan --json` prints."""

    plan_id: str
    short_code: str
    rows: int
    currencies: dict[str, CurrencyFigures]  # the plan's totals and ceiling per currency
    expires_at: str
    outputs: list[str]  # the plan, its maker's signature, its workbook


@dataclass
class PlanOutcome:
    """The dry run, and the plan made of it, or why none was written (`refused`)."""

    dry_run: RunOutcome
    files: PlanFiles
    rows: int = 0
    document: PlanDocument | None = None
    identifier: str = ""
    refused: str = ""
    rates: dict[str, list[str]] = field(default_factory=dict)  # as shown, per wallet currency

    @property
    def short_code(self) -> str:
        return short_code(self.identifier)

    def as_json(self) -> PlanMade:
        """`batchpay plan --json`."""
        assert self.document is not None
        return PlanMade(plan_id=self.identifier, short_code=self.short_code, rows=self.rows,
                        currencies=self.document["currencies"],
                        expires_at=self.document["expires_at"],
                        outputs=[str(self.files.plan), str(self.files.maker_signature),
                                 str(self.files.workbook)])


def make_plan(settings: Settings, options: RunOptions, reporter: Reporter, connect: Opener,
              files: PlanFiles, *, maker: Maker) -> PlanOutcome:
    """Dry-run `options.sheet` (its results go to the plan's workbook) and write the plan of
    the rows it would send, signed by `maker` (`approval.maker_of`), as `batchpay approve`
    and `batchpay run --plan` read it."""
    read: list[Sheet] = []  # the sheet the dry run read, to plan its rows
    if options.kind == "run" and is_results_workbook(options.sheet):
        # a results workbook is planned as `rerun` reads it: FAILED and REFUNDED rows go too
        options = replace(options, kind="rerun")

    def load() -> tuple[Sheet, Validation]:
        sheet, validation = load_input(options, settings)
        read.append(sheet)
        return sheet, validation

    outcome = run_batch(settings, options, reporter, load, connect)
    done = PlanOutcome(outcome, files)
    with Journal(settings.journal) as journal:
        dry = list(result_rows(journal, find_run(journal, outcome.run_id)))
        rows = plan_rows_of(read[-1], dry)
        head = journal.head()
    if any(n.startswith("SHORTFALL") for n in outcome.notes):
        done.refused = "the wallet cannot cover it."
    elif not rows:
        done.refused = "no row would be sent."
    if done.refused:
        return done
    document = build_plan(settings, read[-1], rows, run_id=outcome.run_id,
                          chain_head=head, maker=maker, hours=settings.plan_hours,
                          tolerance=Decimal(str(settings.plan_tolerance)),
                          source_currency=options.source_currency,
                          payee_changes=outcome.payee_changes,
                          results_workbook=options.kind == "rerun",
                          held=[r for r in dry if r.status == "HELD"],
                          released=outcome.released)
    data = canonical_bytes(document)
    for stale in signature_paths(files.plan):  # approvals of a plan this one replaces
        stale.unlink()
    with replaced_atomically(files.plan) as partial:
        partial.write_bytes(data)
    sign_as_maker(files.plan, data, maker)
    checked = read_plan(files.plan)  # what approve will read: the figures recomputed
    checked.maker = maker.principals
    done.rows, done.document, done.identifier = len(rows), document, checked.id
    with Journal(settings.journal) as journal:  # the dry run's workbook, with what to approve
        run = find_run(journal, outcome.run_id)
        quoted = list(result_rows(journal, run))
        done.rates = {c: rates_of(quoted, c) for c in sorted(document["currencies"])}
        render_run(journal, run, files.workbook, rows=quoted, plan_lines=[
            ("plan", files.plan.name), ("plan id", done.identifier),
            ("short code", done.short_code),
            *((f"rate {c}", "; ".join(shown)) for c, shown in done.rates.items() if shown),
            *(("", line.strip()) for line in summary_lines(checked, largest=20,
                                                           zone_name=settings.time_zone))])
    return done
