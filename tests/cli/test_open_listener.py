"""`open_listener`, the library function behind `batchpay listen`: the secret policy before
anything is opened, then the journal's app on a bound socket."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

import pytest

from batchpay.errors import ConfigError, JournalError, UsageError
from batchpay.journal.store import Journal
from batchpay.settings.model import Settings
from batchpay.webhooks import open_listener

SECRET = "s" * 32


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    journal = tmp_path / "journal.sqlite3"
    Journal(journal).close()
    return dataclasses.replace(Settings(journal=journal), webhook_secret=SECRET)


def test_it_is_bound_and_ready_to_serve(settings: Settings) -> None:
    listening = open_listener(settings, port=0)
    try:
        host, port = listening.socket.getsockname()[:2]
        assert host == settings.listen_host == "127.0.0.1"
        assert listening.url == f"http://127.0.0.1:{port}/webhook"
        assert (listening.journal, listening.insecure) == (settings.journal, False)
        assert listening.app.state.journal.path == settings.journal
        with socket.create_connection((host, port), timeout=5):  # queued until served
            pass
    finally:
        listening.socket.close()
        listening.app.state.journal.close()


def test_the_policy_is_checked_before_anything_is_bound(settings: Settings,
                                                        tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError, match="No webhook secret"):
        open_listener(dataclasses.replace(settings, webhook_secret=None), port=port)
    with pytest.raises(ConfigError, match="only listens on loopback"):
        open_listener(settings, host="0.0.0.0", port=port, insecure=True)
    with socket.socket() as s:  # the port was never taken
        s.bind(("127.0.0.1", port))
    with pytest.raises(JournalError, match="No journal"):  # nothing bound either
        open_listener(dataclasses.replace(settings, journal=tmp_path / "none.sqlite3"),
                      port=port)
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_unsigned_on_loopback_is_said_and_a_taken_port_is_a_usage_error(
        settings: Settings) -> None:
    listening = open_listener(dataclasses.replace(settings, webhook_secret=None), port=0,
                              insecure=True)
    try:
        assert listening.insecure
        with pytest.raises(UsageError, match="cannot listen"):
            open_listener(settings, port=listening.socket.getsockname()[1])
    finally:
        listening.socket.close()
        listening.app.state.journal.close()
