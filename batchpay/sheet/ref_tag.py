"""The `ref:` tag: how a payout carries its payout_ref in the service's own records.

The service keeps no client reference, so batchpay writes the payout_ref into the payout's
`remark` as `ref:<payout_ref>` (the row's own remark first, then a space: `Invoice 0001
ref:R-0001`). That is what the supplier's statement shows, and what lets the service's
payout list name the payment when a journal was lost (`engine.service_ledger`).

The tag is always carried. The remark holds at most 140 characters (the column table); a
row whose own remark leaves no room for the tag has its remark cut to make room, and the
row says so (a warning at `validate` and in the Results workbook): a payout without its tag
could be paid again, unseen, from a journal that forgot it.

Reading a tag back is lenient, because people type them by hand in the provider's
dashboard: any case (`REF:HP-A`), spaces after the colon (`ref: HP-B`), a full stop or
other punctuation after it (`ref:HP-C.`), anywhere in the remark. The ref is read as a
whole token, never a part of one: `ref:R-10` names R-10, never R-1.
"""

from __future__ import annotations

import re

from batchpay.sheet.columns import COLUMNS_BY_NAME

REF_TAG = "ref:"
REMARK_LIMIT = COLUMNS_BY_NAME["remark"].max_length or 140
REF_LIMIT = COLUMNS_BY_NAME["payout_ref"].max_length or 64
# `ref` standing alone (not the end of a word: "xref:"), a colon (a Chinese keyboard's
# full-width one too), optional spaces, then the ref's characters as far as they go
_TAG = re.compile(r"(?<![A-Za-z0-9])ref\s*[:：]\s*([A-Za-z0-9._/-]+)", re.IGNORECASE)
# what ends a sentence rather than a ref: a ref typed at the end of one (`ref:HP-C.`)
_TRAILING = "."


def remark_with_ref(remark: str | None, ref: str) -> str:
    """The remark a payout is sent with: the row's own, then `ref:<payout_ref>`; the row's
    remark cut (`remark_cut`) when both do not fit in the remark's limit."""
    tag = f"{REF_TAG}{ref}"
    if not remark:
        return tag
    room = REMARK_LIMIT - len(tag) - 1
    if len(remark) > room:
        remark = remark[:max(room, 0)].rstrip()
        if not remark:
            return tag
    return f"{remark} {tag}"


def remark_cut(remark: str | None, ref: str | None) -> str | None:
    """The row's warning when its remark is cut to carry the tag; None: it is sent whole."""
    if not remark or not ref:
        return None
    room = REMARK_LIMIT - len(REF_TAG) - len(ref) - 1
    if len(remark) <= room:
        return None
    return (f"remark: {len(remark)} characters leave no room for {REF_TAG}{ref} within the "
            f"remark's {REMARK_LIMIT}, so the payout's remark keeps the first {room} "
            f"characters of yours, then {REF_TAG}{ref}; shorten the remark to choose what "
            "is kept")


def refs_in_remark(remark: str | None) -> frozenset[str]:
    """The payout_refs a remark names (upper case, as `ref_key` gives them): every `ref:`
    tag in it, however typed."""
    if not remark or "ref" not in remark.lower():
        return frozenset()
    found = set()
    for match in _TAG.finditer(remark):
        ref = ref_key(match.group(1))
        if 0 < len(ref) <= REF_LIMIT:
            found.add(ref)
    return frozenset(found)


def ref_key(ref: str) -> str:
    """A payout_ref as the tags are matched: upper case, without a full stop at its end
    (`HP-C.` is HP-C: the sentence's stop, not the ref's)."""
    return ref.rstrip(_TRAILING).upper()
