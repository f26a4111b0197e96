"""The engine's messages as a page says them: the page action in place of the command.

The library speaks to a terminal ("run `batchpay sync`", "run again with --allow-repeat
REF"); a browser user has no terminal, and in approval mode some of those commands are
refused anyway. Every message a page shows (row errors, notes, refusals) passes through
`for_page`, which names what does the same on the pages: the Payees page, the release box
of the review, Refresh statuses, uploading the results workbook. The engine's own texts stay
as they are for the commands; a message with no command in it comes back unchanged.
"""

from __future__ import annotations

import re

# the batch's maker only reviews it again: the words say so to whoever reads the page
RELEASE = ("the batch's maker ticks “pay anyway” for the row under Rows held in the review "
           "and presses Review again")
PAYEES = "on the Payees page"
REFRESH = "press Refresh statuses on the batch's page"
UPLOAD_RESULTS = ("upload the results workbook (Results workbook on the batch's page) as a "
                  "new batch")

# (pattern, replacement), applied in order: the longer phrases first
_RULES: list[tuple[re.Pattern[str], str]] = [(re.compile(p), r) for p, r in [
    (r"call the payee on a number you already had, then `batchpay payees confirm [^`]*`",
     f"call the payee on a number you already had, then confirm the payee {PAYEES}"),
    (r"Confirm one payee at a time with `batchpay payees confirm`\.",
     f"Confirm one payee at a time {PAYEES}."),
    (r"\(`batchpay payees confirm [^`]*`\)", f"({PAYEES})"),
    (r"`batchpay payees confirm[^`]*`", "the Payees page"),
    (r"`batchpay payees show [^`]*`", "the Payees page"),
    (r"`batchpay payees`", "the Payees page"),
    (r"(?:if (?:this|a row) is a new payment, |If a row is a new payment, )?"
     r"(?:run again|rerun) with --allow-repeat [A-Za-z0-9._/-]+",
     f"if it is a new payment, {RELEASE}"),
    (r"or run with --skip-invalid to pay the valid rows",
     "or press Continue without the invalid rows to pay the valid ones"),
    (r"run `batchpay sync` to resolve it", REFRESH),
    (r"Run `batchpay sync` later to bring them up to date", f"{REFRESH.capitalize()} later"),
    (r"`batchpay sync` goes on later", "Refresh statuses goes on later"),
    (r"run `batchpay sync`", REFRESH),
    (r"`batchpay sync`", "Refresh statuses"),
    (r"then `batchpay rerun` the results", f"then {UPLOAD_RESULTS}"),
    (r"`batchpay rerun`", UPLOAD_RESULTS),
    (r"check the name against `batchpay banks --country (\w+) --currency (\w+)`",
     r"check the name against the service's bank list for \1/\2"),
    (r"start from `batchpay template`", "start from the empty template on the Batches page"),
    (r"An approver runs `batchpay approve [^`]*`\.", "An approver presses Approve."),
    (r"Make one with `batchpay plan [^`]*`, have it approved with `batchpay approve`, then "
     r"`batchpay run --plan NAME\.plan\.json`\.",
     "Review the batch, and have an approver press Approve."),
    (r"(?:[Rr]un )?`batchpay verify`", "the History and audit page"),
]]


def for_page(text: str) -> str:
    """`text` with each command it names replaced by the page action that does it."""
    if "batchpay" not in text and "--" not in text:
        return text
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
