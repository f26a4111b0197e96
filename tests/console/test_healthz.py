"""`GET /healthz`: 200 while the console's journal database answers, 503 when it does not;
no session needed, and nothing said but that."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from batchpay.console.app import create_app
from batchpay.settings.model import DatabaseURL, Settings


def _health(settings: Settings) -> Any:
    app = create_app(settings, allowed_hosts={"testserver"}, https=False)
    with TestClient(app, base_url="http://testserver") as client:
        return client.get("/healthz")


def test_healthz_is_200_while_the_database_answers_and_503_when_it_is_gone(
        postgres: Any, tmp_path: Path) -> None:
    up = _health(Settings(journal=DatabaseURL(postgres.journal_url())))
    assert up.status_code == 200 and up.json() == {"status": "ok"}
    assert "set-cookie" not in up.headers  # no session was made or needed
    # a server that is not there (no socket in that folder): unreachable, at once
    gone = DatabaseURL(f"postgresql://batchpay@/journal?host={tmp_path}&port=5432")
    down = _health(Settings(journal=gone))
    assert down.status_code == 503 and down.json() == {"status": "journal unreachable"}


def test_healthz_of_a_file_journal(tmp_path: Path) -> None:
    settings = Settings(journal=tmp_path / "journal" / "journal.sqlite3")
    assert _health(settings).status_code == 503  # its folder is not there
    (tmp_path / "journal").mkdir()
    assert _health(settings).status_code == 200  # a new journal can be made there
    (tmp_path / "journal" / "journal.sqlite3").write_bytes(b"not a database" * 100)
    assert _health(dataclasses.replace(settings)).status_code == 503
