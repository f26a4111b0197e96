"""Helpers for the end-to-end tests: run the CLI, count payouts at the sandbox, read results."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openpyxl
from click.testing import CliRunner

from batchpay.cli import cli
from batchpay.tls import verifying_context

# the tests' own calls share the product's TLS context: httpx builds one per call otherwise,
# reading the CA bundle again each time (~20 ms of CPU, even for a plain-HTTP sandbox)
TLS = verifying_context()


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str

    def __repr__(self) -> str:
        return f"exit {self.exit_code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def batchpay(*args: str, env: dict[str, str] | None = None) -> Outcome:
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return Outcome(result.exit_code, result.stdout, result.stderr)


def own_settings(text: str) -> Path:
    """Write the user's own settings file (in XDG_CONFIG_HOME, per test): the one place where
    a test may loosen a control (a folder's batchpay.toml may only tighten them)."""
    from platformdirs import user_config_dir

    path = Path(user_config_dir("batchpay")) / "batchpay.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def sandbox_payouts(url: str) -> list[dict[str, Any]]:
    return httpx.get(f"{url}/_sandbox/payouts", timeout=10, verify=TLS).json()["data"]


def sandbox_stats(url: str) -> dict[str, Any]:
    return httpx.get(f"{url}/_sandbox/stats", timeout=10, verify=TLS).json()


def set_wallet(url: str, currency: str, balance: int | str) -> None:
    httpx.put(f"{url}/_sandbox/wallet", json={"currency": currency, "balance": balance},
              timeout=10, verify=TLS).raise_for_status()


def results(path: Path, sheet: str = "Results") -> list[dict[str, Any]]:
    wb = openpyxl.load_workbook(path, read_only=True)
    rows = list(wb[sheet].iter_rows(values_only=True))
    wb.close()
    header = [str(h) for h in rows[0]]
    return [dict(zip(header, r, strict=False)) for r in rows[1:]]


def by_ref(path: Path) -> dict[str, dict[str, Any]]:
    return {str(r["payout_ref"]): r for r in results(path)}


def edit_results(path: Path, ref: str, **cells: Any) -> None:
    """What an operator does: open the Results sheet, fix cells, save."""
    wb = openpyxl.load_workbook(path)
    ws = wb["Results"]
    header = [c.value for c in ws[1]]
    for r in ws.iter_rows(min_row=2):
        if str(r[header.index("payout_ref")].value) == ref:
            for name, value in cells.items():
                r[header.index(name)].value = value
    wb.save(path)


def form_fields(page: str, batch: str, action: str) -> dict[str, str] | None:
    """A batch page's form for `action` (approve, reject, pay) as a browser sends it: its
    hidden fields (the form token, the plan it shows), the short code typed for Approve,
    the box ticked for Pay; None when the page has no such form."""
    form = re.search(rf'<form method="post" action="/batches/{batch}/{action}".*?</form>',
                     page, re.S)
    if form is None:
        return None
    values = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"',
                             form.group(0)))
    code = re.search(r"short code <strong>([0-9A-Z-]+)</strong>", page)
    if action == "approve" and code is not None:
        values["code"] = code.group(1)
    if action == "pay":
        values["confirm"] = "yes"
    return values
