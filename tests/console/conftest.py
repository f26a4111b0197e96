"""The console under test: a sandbox served for real, the console's app over the same
settings the commands load (the sandbox's URL and key, a journal under tmp_path), and its
users: the owner, a maker, an approver, an auditor and one user with both maker and approver
roles. With approvers among its users the console requires approval unless the user's own
settings file turns it off: the desk writes that file (`require_approval = false`) unless a
test sets require_approval = True or says what the file holds (`own_settings`)."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from batchpay.console import accounts as accounts_module
from batchpay.console.accounts import Accounts, console_folder, hash_password
from batchpay.console.app import create_app
from batchpay.sandbox.server import RunningSandbox
from batchpay.settings.load import load_settings, settings_files
from batchpay.settings.model import Settings
from tests.support.e2e import form_fields

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PASSWORD = "correct horse battery"
USERS = {"mia": ("maker",), "abe": ("approver",), "ada": ("auditor",),
         "max": ("maker", "approver")}


@dataclass
class Desk:
    """One console app, its settings, the sandbox it pays through."""

    app: Any
    settings: Settings
    sandbox: RunningSandbox

    def client(self, user: str) -> Signed:
        """A browser-like client signed in as `user` (by a one-time login link)."""
        client = TestClient(self.app, base_url="https://testserver")
        token = self.app.state.console.sessions.login_link(user)
        answer = client.get(f"/login/{token}", follow_redirects=False)
        assert answer.status_code == 303, answer.text
        return Signed(client, form_token(client.get("/").text))


@dataclass
class Signed:
    http: TestClient
    csrf: str

    def post(self, path: str, **fields: Any) -> Any:
        files = fields.pop("files", None)
        return self.http.post(path, data={"csrf": self.csrf, **fields}, files=files,
                              follow_redirects=False)

    def press(self, batch: str, action: str, **fields: Any) -> Any:
        """A batch page's form for `action` (approve, reject, pay) sent as a browser sends
        it: the page read now, the form's hidden fields (the form token, the plan it shows),
        the short code typed for Approve, the box ticked for Pay; `fields` over these. With
        no such form on the page, the form token alone."""
        values = form_fields(self.http.get(f"/batches/{batch}").text, batch, action) or {}
        return self.post(f"/batches/{batch}/{action}", **{**values, **fields})

    def upload(self, sample: str | Path, data: bytes | None = None) -> Any:
        path = Path(sample) if Path(sample).is_absolute() else SAMPLES / sample
        body = data if data is not None else path.read_bytes()
        return self.post("/upload", files={"sheet": (path.name, body)})


def form_token(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page[:500]
    return found.group(1)


def batch_id(answer: Any) -> str:
    assert answer.status_code == 303, answer.text
    return str(answer.headers["location"]).rsplit("/", 1)[1]


@functools.cache
def the_teams_hash(password: str) -> str:
    """The test users' stored password: a real Argon2id hash of PASSWORD (signing in checks
    it as ever), made once per test process rather than four times per console; each costs
    about 0.15 s of CPU. Only the fixture's own users get it: users a test adds are hashed
    anew."""
    return hash_password(password)


@pytest.fixture
def desk_factory(cli_sandbox: Callable[..., RunningSandbox]) -> Callable[..., Desk]:
    """make(**settings overrides, max_upload_bytes=None, sandbox=dict of SandboxConfig,
    own_settings=the text of the user's own settings file)."""

    def make(*, max_upload_bytes: int | None = None, sandbox: dict[str, Any] | None = None,
             own_settings: str | None = None, **overrides: Any) -> Desk:
        running = cli_sandbox(**(sandbox or {}))
        if own_settings is None and not overrides.get("require_approval"):
            own_settings = "require_approval = false\n"
        if own_settings is not None:
            own = settings_files()[0]
            own.parent.mkdir(parents=True, exist_ok=True)
            own.write_text(own_settings, encoding="utf-8")
        settings = dataclasses.replace(load_settings(), **overrides)
        accounts = Accounts(console_folder(settings.local_folder))
        accounts.ensure_owner()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(accounts_module, "hash_password", the_teams_hash)
            for name, roles in USERS.items():
                accounts.add(name, roles, PASSWORD)
        app = create_app(settings, allowed_hosts={"testserver"}, https=False,
                         max_upload_bytes=max_upload_bytes)
        return Desk(app, settings, running)

    return make


@pytest.fixture
def desk(desk_factory: Callable[..., Desk]) -> Desk:
    return desk_factory()
