"""What a plan states, checked against what its rows give: `approve` shows and `run --plan`
trusts only figures recomputed here, and a plan whose stated figures differ is refused.

    the plan's shape     every field known, each of its own form (a digest is 64 hex digits,
                         a time is a UTC timestamp...): no field is free text that nobody
                         reads, which could be varied at will to make another plan look alike
    its rows             validated as `run --plan` will read them: every row VALID, its
                         payout_ref, source currency and amount the ones its values give
    its figures          NbOfTxs, CtrlSum, the quoted debit and the ceiling per source
                         currency, recomputed from the rows; they must equal the stated ones
    its payee findings   the payee register's findings for the rows still to pay,
                         recomputed from the journal; each must be one the plan states,
                         with who confirmed it
    who acted on it      everyone who changed what the plan pays (its review, a repeat
                         released, a payee confirmation a row is paid on), each a maker of
                         the plan in the two-person rule: none of them approves it
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from batchpay import clock
from batchpay.controls.repeats import ControlSettings
from batchpay.errors import UsageError
from batchpay.money import minor_unit
from batchpay.sheet.read import Sheet, SheetRow
from batchpay.sheet.validate import Validation, validate_sheet

if TYPE_CHECKING:
    from batchpay.controls.payees import PayeeChangeShown
    from batchpay.journal.store import Journal

PLAN_VERSION = 3  # 3: the actors


# The plan, field by field: every level has exactly these fields (SHAPE), money as text.
class PlanMaker(TypedDict):
    user: str  # the OS user, or a console's signed-in user
    host: str
    key: str  # the maker key's fingerprint
    principals: list[str]


class PlanService(TypedDict):
    base_url: str  # "embedded": the sandbox inside batchpay
    key_fingerprint: str


class PlanJournal(TypedDict):
    path: str
    chain_head: str  # the journal's head when the dry run was made


class PlanSheet(TypedDict):
    name: str
    sha256: str
    columns: list[str]


class PlannedRow(TypedDict):
    """A row the plan pays."""

    row: int
    payout_ref: str
    source_currency: str
    values: dict[str, str]  # every input value of the row, as text (amounts exact)
    amount: str  # the source amount quoted (an invoice row's as calibrated)
    total_debit: str  # the dry run's quote: amount + fee


class CurrencyFigures(TypedDict):
    """A source currency's totals: rows, amounts, the quoted debit and its ceiling."""

    NbOfTxs: int
    CtrlSum: str
    quoted_debit: str
    ceiling: str


class HeldRow(TypedDict):
    """A row the checks held out of the plan, and why."""

    row: int
    why: str


class PlanActor(TypedDict):
    """Someone who changed what the plan pays, and how: the review (its maker), a repeat
    released (the payout_ref), a payee confirmation a row is paid on (the payee)."""

    user: str  # a console user, or the OS user of `batchpay plan` and `payees confirm`
    action: Literal["review", "release", "payee confirmation"]
    subject: str  # "" for the review; the payout_ref released; the payee confirmed


ACTIONS = ("review", "release", "payee confirmation")


class PlanDocument(TypedDict):
    version: int
    created_at: str
    expires_at: str
    maker: PlanMaker
    service: PlanService
    journal: PlanJournal
    dry_run: str  # the run id of the dry run the plan was made of
    tolerance: str
    source_currency: str  # "": each row's own
    sheet: PlanSheet
    rows: list[PlannedRow]
    currencies: dict[str, CurrencyFigures]
    payee_changes: list[PayeeChangeShown]
    controls: ControlSettings
    input: Literal["sheet", "results workbook"]
    held: list[HeldRow]
    released_repeats: dict[str, list[str]]  # payout_ref -> the earlier payout_refs
    actors: list[PlanActor]  # who changed what the plan pays: none of them approves it


class PlanRefused(UsageError):
    """A plan that must not be paid (exit 2, nothing sent)."""


HEX64 = re.compile(r"[0-9a-f]{64}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
KEY_PRINT = re.compile(r"SHA256:[A-Za-z0-9+/]{43}")
RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{4}")
CURRENCY = re.compile(r"[A-Z]{3}")
CENT = Decimal("0.01")

# the fields of a plan, at each level: nothing else may be there
SHAPE: dict[str, frozenset[str]] = {
    "": PlanDocument.__required_keys__, "maker": PlanMaker.__required_keys__,
    "service": PlanService.__required_keys__, "journal": PlanJournal.__required_keys__,
    "sheet": PlanSheet.__required_keys__, "row": PlannedRow.__required_keys__,
    "currency": CurrencyFigures.__required_keys__, "controls": ControlSettings.__required_keys__,
    "held": HeldRow.__required_keys__, "actor": PlanActor.__required_keys__,
}
INPUTS = ("sheet", "results workbook")
PAYOUT_REF = re.compile(r"[A-Za-z0-9._/-]{1,64}")


def ceiling_of(debit: Decimal, tolerance: Decimal, currency: str) -> Decimal:
    """The most a currency may be debited: the quoted debit plus the tolerance, to the
    currency's minor unit when it has three or four decimals (KWD keeps its mils) and to
    the cent otherwise, as plans have always written it (JPY 1006.00)."""
    return (debit * (1 + tolerance)).quantize(min(minor_unit(currency), CENT))


def currency_figures(rows: Iterable[PlannedRow], tolerance: Decimal
                     ) -> dict[str, CurrencyFigures]:
    """Per source currency: NbOfTxs, CtrlSum, the quoted debit and the ceiling, as text."""
    totals: dict[str, list[Any]] = {}
    for r in rows:
        total = totals.setdefault(r["source_currency"], [0, Decimal(0), Decimal(0)])
        total[0] += 1
        total[1] += Decimal(r["amount"])
        total[2] += Decimal(r["total_debit"])
    return {c: {"NbOfTxs": n, "CtrlSum": format(amounts, "f"),
                "quoted_debit": format(debit, "f"),
                "ceiling": format(ceiling_of(debit, tolerance, c), "f")}
            for c, (n, amounts, debit) in sorted(totals.items())}


def _refuse(what: str) -> PlanRefused:
    return PlanRefused(f"The plan is not one batchpay made: {what}. Nothing was signed or "
                       "paid; make and approve a new plan.")


def _fields(value: Any, level: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != SHAPE[level]:
        found = sorted(value) if isinstance(value, dict) else type(value).__name__
        raise _refuse(f"{where} has the fields {found}, not {sorted(SHAPE[level])}")
    return value


def _text(value: Any, where: str, form: re.Pattern[str] | None = None,
          longest: int = 500) -> str:
    if not isinstance(value, str) or len(value) > longest or (
            form is not None and not form.fullmatch(value)):
        raise _refuse(f"{where} is {str(value)[:80]!r}" + (
            f", not of the form {form.pattern}" if form is not None else ""))
    return value


def _decimal(value: Any, where: str) -> Decimal:
    try:
        number = Decimal(_text(value, where))
    except InvalidOperation:
        raise _refuse(f"{where} is {value!r}, not a decimal number") from None
    if not number.is_finite() or format(number, "f") != value:
        raise _refuse(f"{where} is {value!r}, not a decimal number written out")
    return number


def _time(value: Any, where: str) -> datetime:
    return clock.parse(_text(value, where, TIME))


def check_shape(document: dict[str, Any]) -> PlanDocument:
    """The plan, once every field is known and of its form (the rows' own values excepted:
    they are what is paid, checked by validation)."""
    _fields(document, "", "the plan")
    created = _time(document["created_at"], "created_at")
    if _time(document["expires_at"], "expires_at") <= created:
        raise _refuse("it expires before it was made")
    maker = _fields(document["maker"], "maker", "maker")
    _text(maker["user"], "maker.user", longest=200)
    _text(maker["host"], "maker.host", longest=200)
    _text(maker["key"], "maker.key", KEY_PRINT)
    if not isinstance(maker["principals"], list) or not maker["principals"]:
        raise _refuse("maker.principals is not a list of names")
    for name in maker["principals"]:
        _text(name, "maker.principals", longest=200)
    service = _fields(document["service"], "service", "service")
    _text(service["base_url"], "service.base_url")
    _text(service["key_fingerprint"], "service.key_fingerprint", longest=100)
    journal = _fields(document["journal"], "journal", "journal")
    _text(journal["path"], "journal.path", longest=4096)
    _text(journal["chain_head"], "journal.chain_head", HEX64)
    _text(document["dry_run"], "dry_run", RUN_ID)
    tolerance = _decimal(document["tolerance"], "tolerance")
    if not 0 <= tolerance <= 1:
        raise _refuse(f"its tolerance {tolerance} is not between 0 and 1")
    if document["source_currency"]:
        _text(document["source_currency"], "source_currency", CURRENCY)
    sheet = _fields(document["sheet"], "sheet", "sheet")
    _text(sheet["name"], "sheet.name", longest=1000)
    _text(sheet["sha256"], "sheet.sha256", HEX64)
    columns = sheet["columns"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise _refuse("sheet.columns is not a list of column names")
    if not isinstance(document["rows"], list) or not document["rows"]:
        raise _refuse("it has no rows")
    for number, row in enumerate(document["rows"], 1):
        _row_shape(row, f"rows[{number}]", set(columns))
    if not isinstance(document["currencies"], dict):
        raise _refuse("currencies is not a table")
    for currency, total in document["currencies"].items():
        _fields(total, "currency", f"currencies.{currency}")
    _payee_changes_shape(document["payee_changes"])
    _decisions_shape(document, {row["payout_ref"] for row in document["rows"]})
    return cast(PlanDocument, document)


def _decisions_shape(document: dict[str, Any], refs: set[str]) -> None:
    """What the maker decided, shown to the approver: the hold settings, whether the input
    is a results workbook (paid as `rerun` would), rows held out and repeats released."""
    controls = _fields(document["controls"], "controls", "controls")
    for name, value in controls.items():
        switch = name in ("hold_new_payees", "payee_confirmed_by_other", "require_approval")
        amount = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
        if (not isinstance(value, bool)) if switch else not amount:
            raise _refuse(f"controls.{name} is {value!r}")
    if document["input"] not in INPUTS:
        raise _refuse(f"input is {str(document['input'])[:80]!r}, not one of {INPUTS}")
    held = document["held"]
    if not isinstance(held, list):
        raise _refuse("held is not a list")
    for number, entry in enumerate(held, 1):
        _fields(entry, "held", f"held[{number}]")
        if not isinstance(entry["row"], int) or isinstance(entry["row"], bool):
            raise _refuse(f"held[{number}].row is not a row number")
        _text(entry["why"], f"held[{number}].why", longest=2000)
    released = document["released_repeats"]
    if not isinstance(released, dict):
        raise _refuse("released_repeats is not a table")
    for ref, earlier in released.items():
        if ref not in refs:  # a release reaches only a row the approver sees in the plan
            raise _refuse(f"released_repeats names {str(ref)[:80]!r}, not a row of the plan")
        if not isinstance(earlier, list) or not all(
                isinstance(e, str) and PAYOUT_REF.fullmatch(e) for e in earlier):
            raise _refuse(f"released_repeats.{ref} is not a list of payout_refs")
    actors = document["actors"]
    if not isinstance(actors, list) or not actors:
        raise _refuse("actors is not a list of who changed what the plan pays")
    for number, actor in enumerate(actors, 1):
        _fields(actor, "actor", f"actors[{number}]")
        _text(actor["user"], f"actors[{number}].user", longest=200)
        _text(actor["subject"], f"actors[{number}].subject", longest=500)
        if actor["action"] not in ACTIONS:
            raise _refuse(f"actors[{number}].action is {str(actor['action'])[:80]!r}, not one "
                          f"of {ACTIONS}")
    if actors[0] != {"user": document["maker"]["user"], "action": "review", "subject": ""}:
        raise _refuse("its first actor is not its maker's review")
    if {a["subject"] for a in actors if a["action"] == "release"} != set(released):
        raise _refuse("the repeats its actors released are not the plan's released_repeats")
    confirmed = {(a["user"], a["subject"]) for a in actors if a["action"] == "payee confirmation"}
    relied = {(str(c.get("confirmer", "")), str(c.get("payee", "")))
              for c in document["payee_changes"] if c.get("decision") == "pay"
              and c.get("confirmed_by")}
    if relied != confirmed:
        raise _refuse("the payee confirmations its actors made are not the ones its rows are "
                      "paid on")


def actors_of(document: PlanDocument) -> dict[str, list[str]]:
    """Who changed what the plan pays (its maker included), and what each did, as said to a
    person: {"mia": ["reviewed it", "released R-B"], "bob": ["confirmed payee SUP-1"]}."""
    found: dict[str, list[str]] = {}
    for actor in document["actors"]:
        found.setdefault(actor["user"], []).append(
            "reviewed it" if actor["action"] == "review" else
            f"released {actor['subject']}" if actor["action"] == "release" else
            f"confirmed payee {actor['subject']}")
    return found


def _row_shape(row: Any, where: str, columns: set[str]) -> None:
    _fields(row, "row", where)
    if not isinstance(row["row"], int) or isinstance(row["row"], bool) or row["row"] < 1:
        raise _refuse(f"{where}.row is not a row number")
    _text(row["source_currency"], f"{where}.source_currency", CURRENCY)
    values = row["values"]
    if not isinstance(values, dict) or not set(values) <= columns or not all(
            isinstance(v, str) for v in values.values()):
        raise _refuse(f"{where}.values are not text values of the sheet's columns")
    if _decimal(row["amount"], f"{where}.amount") <= 0:
        raise _refuse(f"{where}.amount is not above 0")
    if _decimal(row["total_debit"], f"{where}.total_debit") < Decimal(row["amount"]):
        raise _refuse(f"{where}.total_debit is below its amount")


def _payee_changes_shape(changes: Any) -> None:
    from batchpay.controls.payees import PayeeChangeShown

    known = PayeeChangeShown.__required_keys__
    if not isinstance(changes, list) or not all(
            isinstance(c, dict) and set(c) <= known for c in changes):
        raise _refuse("payee_changes is not a list of the payee register's findings")


# --------------------------------------------------------------------------- figures


def plan_sheet(document: PlanDocument, path: Path | None, sha256: str = "") -> Sheet:
    """The rows to pay, rebuilt from a plan: the sheet is never read again (the rows are
    checked here, and paid from the same rebuilt sheet: plan_file.CheckedPlan.sheet)."""
    columns = list(document["sheet"]["columns"])
    rows = [SheetRow(r["row"], [_value(c, r["values"].get(c)) for c in columns])
            for r in document["rows"]]
    return Sheet(path=path or Path(document["sheet"]["name"]), sheet_name="plan",
                 columns=columns, headers=columns, rows=rows, sha256=sha256)


def _value(column: str, text: str | None) -> Any:
    if text is None:
        return None
    if column in ("amount", "target_amount"):
        return Decimal(text)
    return text


def check_figures(document: PlanDocument) -> Validation:
    """The rows validated as `run --plan` reads them; refuses a row whose stated payout_ref,
    source currency or amount is not its values', and stated totals that are not the rows'."""
    validation = validate_sheet(plan_sheet(document, None),
                                source_currency=document["source_currency"] or None)
    for row, check in zip(document["rows"], validation.rows, strict=True):
        where = f"row {row['row']} ({row['payout_ref']})"
        payout = check.payout
        if payout is None:
            raise PlanRefused(f"The plan's {where} is not valid: {check.error}. Nothing was "
                              "signed or paid.")
        if payout.payout_ref != row["payout_ref"] or (
                payout.source_currency != row["source_currency"]) or (
                payout.amount is not None and payout.amount != Decimal(row["amount"])):
            raise PlanRefused(f"The plan's {where} states a payout_ref, source currency or "
                              "amount that is not its values': make and approve a new plan.")
    refs = [r["payout_ref"] for r in document["rows"]]
    if len(set(refs)) != len(refs):
        raise PlanRefused("The plan pays one payout_ref twice: make and approve a new plan.")
    figures = currency_figures(document["rows"], Decimal(document["tolerance"]))
    if figures != document["currencies"]:
        stated = document["currencies"]
        differ = sorted(c for c in set(figures) | set(stated) if figures.get(c) != stated.get(c))
        raise PlanRefused(
            f"The plan's stated totals for {', '.join(differ)} are not its rows' ("
            + "; ".join(f"{c}: rows give {_said(figures.get(c))}, the plan says "
                        f"{_said(stated.get(c))}" for c in differ)
            + "). Nothing was signed or paid: make and approve a new plan.")
    return validation


def _said(total: CurrencyFigures | None) -> str:
    if total is None:
        return "nothing"
    return (f"{total.get('NbOfTxs')} row(s), CtrlSum {total.get('CtrlSum')}, debit "
            f"{total.get('quoted_debit')}, ceiling {total.get('ceiling')}")


def check_times(document: PlanDocument, plan_hours: float, now: datetime | None = None,
                zone_name: str = clock.FALLBACK_ZONE) -> None:
    """Not expired, not made in the future, and not made to last longer than this
    machine's `plan_hours` allows; a refusal tells its times in `zone_name` (the
    `time_zone` setting)."""
    now = now or clock.now()
    created = _time(document["created_at"], "created_at")
    expires = _time(document["expires_at"], "expires_at")

    def shown(when: datetime) -> str:
        return clock.show(when, zone_name, seconds=True)

    if now >= expires:
        raise PlanRefused(f"The plan expired at {shown(expires)}: make and approve a "
                          "new one.")
    if created > now + timedelta(minutes=5):
        raise PlanRefused(f"The plan says it was made at {shown(created)}, in the "
                          "future: make and approve a new one.")
    if expires - created > timedelta(hours=plan_hours) + timedelta(seconds=1):
        raise PlanRefused(f"The plan was made to last until {shown(expires)}, longer "
                          f"than plan_hours ({plan_hours:g}) allows: make and approve a new one.")


# --------------------------------------------------------------------------- payees


def unstated_findings(document: PlanDocument, validation: Validation, journal: Journal,
                      hold_new: bool, cooling_hours: float) -> list[str]:
    """The payee register's findings, recomputed from `journal`, for the plan's rows not yet
    paid, that the plan does not state as they are now (none: the plan hides nothing)."""
    from batchpay.controls.payee_keys import payee_values
    from batchpay.controls.payees import HoldRules, check_rows, reported
    from batchpay.statuses import NO_PAYOUT

    rows = [(seq, c.row, c.payout.payout_ref, c.payout) for seq, c in
            enumerate(validation.rows) if c.payout is not None]
    ledger = journal.entries(ref for _, _, ref, _ in rows)
    pending = [(seq, row, ref, payee_values(p)) for seq, row, ref, p in rows
               if ledger.get(ref) is None or ledger[ref].status in NO_PAYOUT]
    found = reported(check_rows(journal, pending, HoldRules(hold_new, cooling_hours)))
    # a plan's finding may lack a field (the shape allows fewer): read with get
    stated: dict[object, Mapping[str, object]] = {
        c.get("payout_ref"): c for c in document["payee_changes"]}
    missing = []
    for finding in found:
        said = stated.get(finding["payout_ref"], {})
        now: Mapping[str, object] = finding
        # who confirmed a change is compared too: each confirmer is one of the plan's actors
        if any(said.get(k) != now.get(k) for k in ("payee", "reason", "fields", "decision",
                                                     "confirmer")):
            missing.append(f"row {finding['row']} {finding['payout_ref']}: {finding['payee']} "
                           f"{finding['reason']}")
    return missing
