"""The remittance advice as a PDF, in Chinese and English, with a CJK font embedded.

A payee in China reads the names as they were paid: the recipient name is written exactly as
the payout request sent it, so the PDF must carry a font with every Chinese character. The
font is found when an advice is made (Debian's fonts-noto-cjk, through fontconfig's
`fc-list`), or named by `[mail] font`; fpdf2 embeds only the glyphs used (a subset), from a
TrueType/OpenType file or one face of a .ttc collection. No such font: AdviceError, which
names the package to install, instead of a PDF of empty boxes.
"""

from __future__ import annotations

import shutil
import string
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from batchpay.errors import AdviceError
from batchpay.money import EXPONENTS

# fontconfig's families in the order they are preferred: simplified Chinese first
_PREFERRED = ("Noto Sans CJK SC", "Noto Sans SC", "Noto Serif CJK SC", "Source Han Sans SC",
              "WenQuanYi Zen Hei", "Noto Sans CJK")
_FONT_HINT = ("Install a Chinese font (Debian/Ubuntu: apt-get install fonts-noto-cjk), or name "
              "a .ttf/.otf/.ttc file with font = \"...\" in the [mail] settings.")


@dataclass(frozen=True)
class CjkFont:
    path: Path
    index: int = 0  # the face in a .ttc collection


@dataclass(frozen=True)
class AdviceLine:
    payout_ref: str
    remark: str
    account: str  # masked: its last four digits only (`masked`)
    amount: Decimal  # what the payee received (the service's quote), exact
    currency: str
    reference_number: str


@dataclass(frozen=True)
class AdviceDocument:
    payer: str
    payee_name: str  # exactly as the payout request sent it
    paid_on: str  # YYYY-MM-DD (UTC), the run's day
    run_id: str
    lines: tuple[AdviceLine, ...]

    def totals(self) -> dict[str, Decimal]:
        out: dict[str, Decimal] = {}
        for line in self.lines:
            out[line.currency] = out.get(line.currency, Decimal(0)) + line.amount
        return out


def find_cjk_font(chosen: Path | None = None) -> CjkFont:
    """The font advices are written in: `chosen` (a file; for a .ttc its simplified-Chinese
    regular face when fontconfig lists it), else the best Chinese font fontconfig knows."""
    listed = _fontconfig_faces()
    if chosen is not None:
        if not chosen.is_file():
            raise AdviceError(f"The font file {chosen} ([mail] font) does not exist.",
                              hint=_FONT_HINT)
        faces = [face for face in listed if face.path.resolve() == chosen.resolve()]
        return CjkFont(chosen, min(faces, key=_rank).index if faces else 0)
    if not listed:
        raise AdviceError("No Chinese (CJK) font is installed: a remittance advice would show "
                          "the payees' names as empty boxes.", hint=_FONT_HINT)
    best = min(listed, key=_rank)
    return CjkFont(best.path, best.index)


@dataclass(frozen=True)
class _Face:
    path: Path
    family: str
    style: str
    index: int


def _rank(face: _Face) -> tuple[int, int, str, int]:
    """Preferred family first, then a regular weight (not bold, light...), then by name."""
    family = next((n for n, name in enumerate(_PREFERRED) if name in face.family),
                  len(_PREFERRED))
    regular = 0 if face.style.split(",")[0].strip() in ("Regular", "Book", "") else 1
    return family, regular, str(face.path), face.index


def _fontconfig_faces() -> list[_Face]:
    """Every font fontconfig says covers Chinese, in formats fpdf2 embeds (TrueType/OpenType
    and their collections)."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return []
    try:
        out = subprocess.run(
            [fc_list, ":lang=zh-cn", "-f", "%{file}\t%{family}\t%{style}\t%{index}\n"],
            capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    faces = []
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and parts[0].lower().endswith((".ttf", ".otf", ".ttc")):
            faces.append(_Face(Path(parts[0]), parts[1], parts[2],
                               int(parts[3]) if parts[3].isdigit() else 0))
    return faces


def reduced_font(font: CjkFont, docs: Iterable[AdviceDocument], folder: Path) -> CjkFont:
    """The font cut down, once, to the characters these advices use (their texts, the
    labels, printable ASCII), written into `folder`. Embedding reads the whole font for each
    PDF otherwise: a CJK collection's 65,000 glyphs take seconds per advice, its few hundred
    used ones a fraction of that."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    used = set(string.printable + _LABELS)
    for doc in docs:
        used.update(doc.payer + doc.payee_name + doc.paid_on + doc.run_id)
        for line in doc.lines:
            used.update(line.payout_ref + line.remark + line.account + line.currency
                        + line.reference_number)
    options = subset.Options()
    options.name_IDs = ["*"]  # keep the family name the PDF shows as the font's
    options.notdef_outline = True
    try:
        whole = TTFont(str(font.path), fontNumber=font.index, lazy=True)
        subsetter = subset.Subsetter(options)
        subsetter.populate(text="".join(sorted(used)))
        subsetter.subset(whole)
        path = folder / "advice-font.otf"
        whole.save(str(path))
    except Exception as exc:  # noqa: BLE001 - fontTools raises many kinds for a bad file
        raise AdviceError(f"The font {font.path} could not be read: {exc}.",
                          hint=_FONT_HINT) from None
    return CjkFont(path, 0)


def masked(account: str) -> str:
    """An account number as an advice shows it: its last four digits only."""
    digits = "".join(ch for ch in account if ch.isdigit())
    return "**** " + digits[-4:] if digits else ""


def _money(amount: Decimal, currency: str) -> str:
    """Grouped digits with at least the currency's decimals: zeros padded, never rounded."""
    places = EXPONENTS.get(currency, 2)
    exponent = amount.as_tuple().exponent
    if isinstance(exponent, int) and exponent > -places:
        amount = amount.quantize(Decimal(1).scaleb(-places))  # pads zeros only: exact
    return f"{amount:,}"


_TITLE = "付款通知 Remittance advice"
_FIELDS = ("付款方 Payer", "收款方 Payee", "付款日期 Payment date", "批次 Batch")
_HEADINGS = ("付款编号\nPayout ref", "附言\nRemark", "收款账户\nAccount",
             "到账金额\nAmount received", "银行参考号\nReference")
_TOTAL = "合计 Total"
_FOOT = ("银行参考号为付款服务商的交易编号，可用于向您的银行查询到账情况。\n"
         "The reference is the payment provider's transaction number: quote it to your bank "
         "to trace the payment.")
_LABELS = _TITLE + "".join(_FIELDS) + "".join(_HEADINGS) + _TOTAL + _FOOT + "，：。（）¥"


def render_advice(doc: AdviceDocument, font: CjkFont) -> bytes:
    """The advice as PDF bytes: a title, who paid whom and when, one table row per payout,
    the totals, and a line on what the reference number is for."""
    from fpdf import FPDF, FontFace

    pdf = FPDF(format="A4")
    pdf.set_title(f"Remittance advice {doc.run_id}")
    pdf.set_creator("batchpay")
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_font("cjk", fname=str(font.path), collection_font_number=font.index)
    pdf.add_page()
    pdf.set_font("cjk", size=16)
    pdf.cell(0, 10, _TITLE, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("cjk", size=10)
    for label, value in zip(_FIELDS, (doc.payer, doc.payee_name, doc.paid_on, doc.run_id),
                            strict=True):
        pdf.cell(45, 7, label)
        pdf.multi_cell(0, 7, value, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("cjk", size=9)
    with pdf.table(col_widths=(34, 50, 22, 34, 40), headings_style=FontFace(emphasis=""),
                   text_align=(
            "LEFT", "LEFT", "LEFT", "RIGHT", "LEFT")) as table:
        table.row(_HEADINGS)
        for line in doc.lines:
            table.row((line.payout_ref, line.remark, line.account,
                       f"{line.currency} {_money(line.amount, line.currency)}",
                       line.reference_number))
    pdf.ln(4)
    pdf.set_font("cjk", size=10)
    for currency, total in sorted(doc.totals().items()):
        pdf.cell(0, 7, f"{_TOTAL}: {currency} {_money(total, currency)}",
                 new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    pdf.set_font("cjk", size=8)
    pdf.multi_cell(0, 5, _FOOT)
    return bytes(pdf.output())
