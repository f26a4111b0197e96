"""A CSV payout file: its text read faithfully (never garbled by a guessed encoding), then
its cells, measured against the sheet limits before they are parsed."""

from __future__ import annotations

import codecs
import csv
import io
import re
from typing import Any

from batchpay.errors import InputError, UsageError
from batchpay.sheet.limits import DEFAULT_LIMITS, SheetLimits


def read_csv(data: bytes, file_name: str, limits: SheetLimits = DEFAULT_LIMITS,
              encoding: str | None = None) -> tuple[list[list[Any]], str]:
    """The cells as text, and the field separator found in the header line.

    Lines and separators are counted in the bytes before anything is decoded or parsed (an
    upper bound: a quoted separator counts too), so a file of millions of tiny fields is
    refused in a fraction of a second; the parsed rows are then measured exactly."""
    text = decode_csv(data, file_name, encoding)
    newline = text.find("\n")
    header = text[:newline if newline != -1 else len(text)]
    delimiter = max(",;\t", key=header.count)
    lines = text.count("\n") + (not text.endswith("\n"))
    limits.check(file_name, rows=lines, columns=0, cells=text.count(delimiter) + lines)
    # one long cell is one INVALID row (too long for its column), not a refused file
    csv.field_size_limit(max(csv.field_size_limit(), limits.max_bytes))
    try:
        grid = [list(record) for record in csv.reader(io.StringIO(text, newline=""),
                                                      delimiter=delimiter)]
    except csv.Error as exc:
        raise InputError(f"{file_name} is not a valid CSV file ({exc}).") from None
    limits.check(file_name, rows=len(grid), columns=max(map(len, grid), default=0))
    return grid, delimiter


ENCODING_HINT = ("Give the file's encoding with --encoding (e.g. --encoding big5 for "
                 "Traditional Chinese, --encoding utf-16 for Excel's 'Unicode Text'), or save it "
                 "from Excel as 'CSV UTF-8 (Comma delimited)'.")
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"),
         (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))
# private use: no name, bank or city is written with one; they are what another encoding's
# bytes become when read as GB18030 (Big5's 朝代 as 朝\ue610ゅ)
_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")


# Big5's most common characters (lead bytes A4-A7) are kana, Greek or Cyrillic in GB18030:
# 黃志強 becomes 独в眏. No Chinese name or bank writes one next to a Chinese character.
_FOREIGN = "\u0370-\u03ff\u0400-\u04ff\u3040-\u30ff"
_MIXED_SCRIPTS = re.compile(f"[\u4e00-\u9fff][{_FOREIGN}]|[{_FOREIGN}][\u4e00-\u9fff]")


def decode_csv(data: bytes, file_name: str, encoding: str | None = None) -> str:
    """The text of a CSV file: in `encoding` when given (--encoding), else by its byte order
    mark, else UTF-8, else GB18030 (what Excel on a Chinese Windows saves as "CSV").

    Whatever the encoding, the text must hold no private-use character and encode back to
    the very bytes read: a file in another encoding that merely decodes without an error
    (Big5 read as GB18030) is refused, never paid with garbled names. A guessed GB18030
    reading that needs characters outside GB2312, of bytes that read as Big5 too, is refused
    with the names shown both ways."""
    if encoding is not None:
        try:
            name = codecs.lookup(encoding).name
        except LookupError:
            raise UsageError(f"--encoding {encoding} is not an encoding Python knows.",
                             hint="Use e.g. utf-8, gb18030, big5 or utf-16.") from None
        candidates = [name]
    else:
        bom = next((codec for mark, codec in _BOMS if data.startswith(mark)), None)
        if bom is None and data[:65536].count(b"\x00") > 64:  # not text, or UTF-16 unmarked
            raise InputError(f"{file_name} is not a text (CSV) file.",
                             hint="Give an .xlsx workbook or a .csv file (see `batchpay "
                                  "template`). " + ENCODING_HINT)
        candidates = [bom] if bom else ["utf-8", "gb18030"]
    for name in candidates:
        try:
            text = data.decode(name)
        except UnicodeDecodeError:
            continue
        _require_faithful(text, data, name, file_name, round_trip=encoding is None)
        return text
    if encoding is not None:
        raise InputError(f"{file_name} is not {encoding} text.", hint=ENCODING_HINT)
    raise InputError(f"{file_name} is neither UTF-8 nor GB18030 text.", hint=ENCODING_HINT)


def _require_faithful(text: str, data: bytes, encoding: str, file_name: str,
                      round_trip: bool) -> None:
    """Refuse text that holds a private-use character or (`round_trip`: the encoding was
    guessed) does not encode back to `data`."""
    shown = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding.upper()
    odd = None if text.isascii() else _PRIVATE_USE.search(text)
    if odd:
        line = text.count("\n", 0, odd.start()) + 1
        raise InputError(
            f"{file_name} does not read as {shown} text: line {line} holds U+{ord(odd.group()):04X}, "
            "a private-use character, so the file is in another encoding.", hint=ENCODING_HINT)
    if encoding == "gb18030" and round_trip and (mixed := _MIXED_SCRIPTS.search(text)):
        line = text.count("\n", 0, mixed.start()) + 1
        raise InputError(
            f"{file_name} does not read as GB18030 text: line {line} mixes Chinese with other "
            f"scripts ({mixed.group()!r}), as Big5 bytes read as GB18030 do.", hint=ENCODING_HINT)
    if round_trip and encoding not in ("utf-8", "utf-8-sig", "utf-16", "utf-32") \
            and text.encode(encoding, errors="replace") != data:
        raise InputError(f"{file_name} does not read as {shown} text: its bytes do not survive "
                         "being read and written back.", hint=ENCODING_HINT)
    if encoding == "gb18030" and round_trip:
        _refuse_if_big5_too(text, data, file_name)


# Han characters: the CJK blocks a name, bank or city is written in
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_BIG5 = ("big5", "cp950", "big5hkscs")  # Taiwan's, Windows' and Hong Kong's Big5
SHOWN_NAMES = 3  # the names shown both ways in the message


def _refuse_if_big5_too(text: str, data: bytes, file_name: str) -> None:
    """Refuse a GB18030 reading that needs Han characters outside GB2312 when the bytes also
    read as Big5: Big5's common characters become rare ones in GB18030 (張偉 reads 眎岸), which
    no other check sees. GB2312 holds the 6,763 characters of mainland names and banks, so a
    GBK file of ordinary mainland names reads on; a rare one (镕, 喆) asks for --encoding.

    charset-normalizer was tried as a second opinion and left out: on files of a few names
    it finds no difference between the two readings (the same chaos, 0.0, for most of them)
    and sometimes prefers the GB18030 reading of a Big5 file."""
    if text.isascii():
        return
    rare = {c for c in set(text) if _HAN.match(c) and not _in_gb2312(c)}
    if not rare:
        return
    for big5 in _BIG5:
        try:
            other = data.decode(big5)
        except UnicodeDecodeError:
            continue
        shown = ", ".join(f"{b} ({big5}) or {g} (gb18030)"
                          for b, g in _names_both_ways(text, other, rare))
        raise InputError(
            f"{file_name} reads as Big5 and as GB18030 text, and the two differ: {shown}. "
            "batchpay does not guess which.",
            hint=f"Give --encoding {big5} (Traditional Chinese: Taiwan, Hong Kong) or "
                 "--encoding gb18030 (Simplified Chinese), whichever shows the names right, "
                 "or save the file from Excel as 'CSV UTF-8 (Comma delimited)'.")


def _in_gb2312(character: str) -> bool:
    try:
        character.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return True


def _names_both_ways(gb: str, big5: str, rare: set[str]) -> list[tuple[str, str]]:
    """The first cells (up to SHOWN_NAMES) whose GB18030 reading holds a `rare` character,
    as (Big5 reading, GB18030 reading). Both readings keep every ASCII byte where it was
    (a double-byte character's second byte is never a separator, quote or line end), so
    their lines and cells correspond."""
    shown: list[tuple[str, str]] = []
    delimiter = max(",;\t", key=gb.split("\n", 1)[0].count)
    for gb_line, big5_line in zip(gb.split("\n"), big5.split("\n"), strict=False):
        if not any(c in rare for c in gb_line):
            continue
        cells = zip(next(csv.reader([gb_line], delimiter=delimiter), []),
                    next(csv.reader([big5_line], delimiter=delimiter), []), strict=False)
        for gb_cell, big5_cell in cells:
            both = (big5_cell.strip(), gb_cell.strip())
            if any(c in rare for c in gb_cell) and both not in shown:
                shown.append(both)
                if len(shown) == SHOWN_NAMES:
                    return shown
    return shown
