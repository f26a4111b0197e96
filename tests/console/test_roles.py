"""The console's role matrix, whole: every role (owner, maker, approver, auditor, maker and
approver, a user with no role) against every form that changes something, read from the
app's own routes. A route added without a rule here fails the first test; a role let
through where its rule says no fails the second, which also checks that nothing changed
(the console's files and the journal) and that nothing was paid."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Mount, Route

from batchpay.console.accounts import OWNER, console_folder
from batchpay.console.app import create_app
from batchpay.journal.store import Journal
from tests.console.conftest import Desk, batch_id
from tests.support.e2e import sandbox_payouts

pytestmark = pytest.mark.slow

# each POST route and the roles that may use it; None: no role needed (signing in and out)
RULES: dict[str, frozenset[str] | None] = {
    "/login": None,
    "/logout": None,
    "/upload": frozenset({"maker"}),
    "/batches/{id}/review": frozenset({"maker"}),
    "/batches/{id}/approve": frozenset({"approver"}),
    "/batches/{id}/signature": frozenset({"approver"}),
    "/batches/{id}/reject": frozenset({"approver"}),
    "/batches/{id}/pay": frozenset({"maker"}),
    "/batches/{id}/refresh": frozenset({"maker"}),
    "/batches/{id}/resume": frozenset({"maker"}),
    "/batches/{id}/continue": frozenset({"maker"}),
    "/batches/{id}/discard": frozenset({"maker"}),
    "/payees/confirm": frozenset({"maker"}),
}
NOBODY = "nel"  # a user whose roles were all taken away (users.json edited by hand)
USERS = {OWNER: (OWNER,), "mia": ("maker",), "abe": ("approver",), "ada": ("auditor",),
         "max": ("maker", "approver"), NOBODY: ()}
FIELDS = {"reason": "not this month", "method": "phone", "payee": "x", "last4": "1234",
          "code": "0000-0000-0000-0000-0000", "plan": "0" * 64, "signature_text": "x"}


def changing_routes(app: Any) -> set[str]:
    """Every route of the app (and of what it mounts) that answers POST."""
    found: set[str] = set()
    for route in app.routes:
        if isinstance(route, Route) and "POST" in (route.methods or ()):
            found.add(route.path)
        elif isinstance(route, Mount):
            found |= {f"{route.path}{r.path}" for r in route.routes
                      if isinstance(r, Route) and "POST" in (r.methods or ())}
    return found


def test_every_route_that_changes_something_has_a_role_rule(tmp_path: Path) -> None:
    from batchpay.settings.model import Settings

    app = create_app(Settings(journal=tmp_path / "journal.sqlite3"),
                     allowed_hosts={"testserver"}, https=False)
    assert changing_routes(app) == set(RULES)


def state(desk: Desk) -> str:
    """What a refused form must leave as it was: every file of the console (users, keys,
    batches and their records) and the journal's events."""
    folder = console_folder(desk.settings.local_folder)
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    where = desk.settings.journal
    if not isinstance(where, Path) or where.is_file():
        with Journal(where) as journal:
            events = journal.db.execute("SELECT COUNT(*), MAX(seq) FROM events").fetchone()
        digest.update(repr(tuple(events)).encode())
    return digest.hexdigest()


def without_roles(desk: Desk, name: str) -> None:
    accounts = desk.app.state.console.accounts
    stored = json.loads(accounts.path.read_text())
    stored["users"][name] = {**stored["users"]["ada"], "roles": []}
    accounts.path.write_text(json.dumps(stored))


@pytest.mark.parametrize("path", sorted(p for p, rule in RULES.items() if rule is not None))
def test_each_role_is_let_through_only_where_its_rule_says(desk: Desk, path: str) -> None:
    rule = RULES[path]
    assert rule is not None
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    without_roles(desk, NOBODY)
    target = path.replace("{id}", batch)
    denied = [u for u, roles in USERS.items() if not set(roles) & rule]
    allowed = [u for u in USERS if u not in denied]
    assert denied and allowed, path
    for user in denied:
        before = state(desk)
        answer = desk.client(user).post(target, **FIELDS)
        assert answer.status_code == 403, (user, path, answer.status_code, answer.text[:300])
        assert "This needs the" in answer.text, (user, path)
        assert state(desk) == before, f"{user} changed something with {path}"
    for user in allowed:  # refused for other reasons perhaps (not their batch), never the role
        answer = desk.client(user).post(target, **FIELDS)
        assert "This needs the" not in answer.text, (user, path)
    assert sandbox_payouts(desk.sandbox.url) == []
