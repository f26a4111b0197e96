"""What the console refuses, over Starlette's TestClient: requests from other sites, forms
without the session's token, unknown hosts, oversized uploads, ended sessions, and users
acting beyond their role or on their own batch. Each refusal is checked by its effect too
(no batch made, no signature written, no payout at the sandbox)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from batchpay.console.server import ServeOptions, prepare
from batchpay.errors import UsageError
from tests.console.conftest import PASSWORD, Desk, batch_id
from tests.support.e2e import sandbox_payouts


def batches_made(desk: Desk) -> int:
    return len(desk.app.state.console.batches.all())


def approvals_of(batch: Any) -> list[Path]:
    """The approvers' signatures beside the batch's plan (its maker's is apart)."""
    from batchpay.controls.approval import signature_paths

    return signature_paths(batch.plan_files.plan)


def reviewed_batch(desk: Desk, maker: str = "mia") -> str:
    signed = desk.client(maker)
    batch = batch_id(signed.upload("november-payouts.xlsx"))
    answer = signed.post(f"/batches/{batch}/review")
    assert answer.status_code == 303, answer.text
    return batch


def test_a_post_from_another_site_is_refused_before_the_form_is_read(desk: Desk) -> None:
    signed = desk.client("mia")
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                    {"Origin": "https://evil.example"}, {"Origin": "null"}):
        answer = signed.http.post("/upload", data={"csrf": signed.csrf}, headers=headers,
                                  files={"sheet": ("a.csv", b"payout_ref\nX\n")})
        assert answer.status_code == 403, headers
    assert batches_made(desk) == 0
    same = signed.http.post("/upload", data={"csrf": signed.csrf},
                            headers={"Sec-Fetch-Site": "same-origin",
                                     "Origin": "http://testserver"},
                            files={"sheet": ("a.csv", b"payout_ref\nX\n")},
                            follow_redirects=False)
    assert same.status_code == 303 and batches_made(desk) == 1


def test_a_form_without_the_sessions_token_is_refused(desk: Desk) -> None:
    signed = desk.client("mia")
    sheet = {"sheet": ("a.csv", b"payout_ref\nX\n")}
    assert signed.http.post("/upload", files=sheet).status_code == 403
    assert signed.http.post("/upload", data={"csrf": "x" * 22}, files=sheet).status_code == 403
    other = desk.client("max")  # another session's token is no good here either
    assert signed.http.post("/upload", data={"csrf": other.csrf}, files=sheet).status_code == 403
    assert batches_made(desk) == 0


def test_the_session_cookie_is_host_only_secure_httponly_strict(desk: Desk) -> None:
    client = TestClient(desk.app, base_url="https://testserver")
    token = desk.app.state.console.sessions.login_link("mia")
    answer = client.get(f"/login/{token}", follow_redirects=False)
    cookie = answer.headers["set-cookie"]
    name, _, attributes = cookie.partition(";")
    assert name.startswith("__Host-batchpay-session=")
    assert len(name.split("=", 1)[1]) >= 22  # 128 random bits
    flags = {a.strip().split("=")[0].lower(): a.strip() for a in attributes.split(";")}
    assert {"secure", "httponly", "samesite", "path"} <= set(flags)
    assert flags["samesite"].lower() == "samesite=strict" and flags["path"] == "Path=/"
    assert "domain" not in flags
    # the link is spent: opening it again signs nobody in
    again = TestClient(desk.app, base_url="https://testserver").get(f"/login/{token}",
                                                                    follow_redirects=False)
    assert again.status_code == 403 and "set-cookie" not in again.headers


def test_every_answer_carries_the_security_headers(desk: Desk) -> None:
    signed = desk.client("mia")
    for answer in (signed.http.get("/"), signed.http.get("/login"),
                   signed.http.get("/static/console.js"), signed.http.post("/upload"),
                   signed.http.get("/", headers={"Host": "evil.example"})):
        csp = answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["x-frame-options"] == "DENY"


def test_an_unknown_host_name_is_refused(desk: Desk) -> None:
    """DNS rebinding: a site whose name now points at 127.0.0.1 is still not this host."""
    signed = desk.client("mia")
    answer = signed.http.get("/", headers={"Host": "attacker.example:8765"})
    assert answer.status_code == 400
    posted = signed.http.post("/upload", data={"csrf": signed.csrf},
                              headers={"Host": "attacker.example"},
                              files={"sheet": ("a.csv", b"payout_ref\nX\n")})
    assert posted.status_code == 400 and batches_made(desk) == 0


def test_an_oversized_upload_is_refused_with_413(desk_factory) -> None:  # type: ignore[no-untyped-def]
    desk = desk_factory(max_upload_bytes=100_000)
    signed = desk.client("mia")
    answer = signed.upload("big.csv", data=b"payout_ref\n" + b"X" * 400_000)
    assert answer.status_code == 413
    assert batches_made(desk) == 0
    assert "100 KB" in signed.http.get("/").text or "0 MB" in signed.http.get("/").text


def test_a_signed_out_session_is_refused(desk: Desk) -> None:
    signed = desk.client("mia")
    cookie = signed.http.cookies.get("__Host-batchpay-session")
    assert signed.http.get("/", follow_redirects=False).status_code == 200
    out = signed.post("/logout")
    assert out.status_code == 303
    replay = TestClient(desk.app, base_url="https://testserver")
    replay.cookies.set("__Host-batchpay-session", cookie)
    assert replay.get("/", follow_redirects=False).headers["location"] == "/login"
    answer = replay.post("/upload", data={"csrf": signed.csrf},
                         files={"sheet": ("a.csv", b"payout_ref\nX\n")})
    assert answer.status_code == 403 and batches_made(desk) == 0


def test_password_sign_in_and_the_stored_hash(desk: Desk) -> None:
    client = TestClient(desk.app, base_url="https://testserver")
    wrong = client.post("/login", data={"name": "abe", "password": PASSWORD + "x"})
    assert wrong.status_code == 401 and "__Host-" not in wrong.headers.get("set-cookie", "")
    assert client.post("/login", data={"name": "nobody", "password": PASSWORD}
                       ).status_code == 401
    owner = client.post("/login", data={"name": "owner", "password": ""})
    assert owner.status_code == 401  # the owner signs in by the printed link only
    right = client.post("/login", data={"name": "abe", "password": PASSWORD},
                        follow_redirects=False)
    assert right.status_code == 303 and "__Host-batchpay-session=" in right.headers["set-cookie"]
    stored = json.loads((desk.app.state.console.accounts.path).read_text())["users"]["abe"]
    assert stored["password"].startswith("argon2id$v=19$m=65536,t=2,p=1$")
    assert PASSWORD not in json.dumps(stored)
    assert desk.app.state.console.accounts.path.stat().st_mode & 0o077 == 0


def test_an_auditor_can_read_but_not_approve_or_pay(desk: Desk) -> None:
    batch = reviewed_batch(desk)
    auditor = desk.client("ada")
    assert auditor.http.get(f"/batches/{batch}").status_code == 200
    assert auditor.http.get("/history").status_code == 200
    assert auditor.press(batch, "approve").status_code == 403
    assert auditor.press(batch, "pay").status_code == 403
    assert auditor.press(batch, "reject", reason="no").status_code == 403
    assert auditor.upload("november-payouts.xlsx").status_code == 403
    meta = desk.app.state.console.batches.get(batch).meta
    assert meta["stage"] == "reviewed" and not meta["approvals"] and "pay" not in meta
    assert sandbox_payouts(desk.sandbox.url) == []


def test_a_maker_cannot_approve_their_own_batch(desk: Desk) -> None:
    batch = reviewed_batch(desk, maker="max")  # max is maker and approver
    maker = desk.client("max")
    answer = maker.press(batch, "approve")
    assert answer.status_code == 403 and "cannot approve their own batch" in answer.text
    stored = desk.app.state.console.batches.get(batch)
    assert approvals_of(stored) == [] and stored.meta["approvals"] == []
    # someone else's approval is taken, signed with their own key
    approver = desk.client("abe")
    assert approver.press(batch, "approve").status_code == 303
    assert len(approvals_of(stored)) == 1


def test_a_maker_cannot_slip_in_a_signature_made_with_their_own_key(desk: Desk) -> None:
    from batchpay import sshsig
    from batchpay.controls.approval import NAMESPACE

    batch = reviewed_batch(desk, maker="mia")
    stored = desk.app.state.console.batches.get(batch)
    mias_key = desk.app.state.console.accounts.signing_key("mia")
    armored = sshsig.sign(mias_key, stored.plan_files.plan.read_bytes(), NAMESPACE)
    approver = desk.client("abe")  # even posted by an approver, the maker's key is refused
    answer = approver.post(f"/batches/{batch}/signature", signature_text=armored)
    assert answer.status_code == 409 and "maker" in answer.text
    assert approvals_of(stored) == []


def test_the_plan_is_signed_by_the_console_user_who_made_the_batch(desk: Desk) -> None:
    from batchpay import sshsig
    from batchpay.controls import plan_file

    batch = reviewed_batch(desk, maker="mia")
    stored = desk.app.state.console.batches.get(batch)
    plan = plan_file.read_plan(stored.plan_files.plan)
    maker = plan.document["maker"]
    mias_key = desk.app.state.console.accounts.fingerprint("mia")
    assert (maker["user"], maker["principals"], maker["key"]) == ("mia", ["mia"], mias_key)
    signed = plan_file.maker_signature_path(stored.plan_files.plan).read_text()
    assert sshsig.fingerprint(sshsig.verify(signed, plan.data, plan_file.MAKER_NAMESPACE)) \
        == mias_key


def test_the_library_refuses_the_makers_principal_past_the_pages_own_check(desk: Desk) -> None:
    from batchpay.console import signing
    from batchpay.controls.plan_checks import PlanRefused

    console = desk.app.state.console
    batch = console.batches.get(reviewed_batch(desk, maker="max"))  # max: maker and approver
    plan = batch.meta["review"]["plan_id"]
    with pytest.raises(PlanRefused, match="maker cannot approve"):
        signing.approve(batch, console.accounts, "max", desk.settings, plan)
    # mia is a maker only: her key makes plans and approves none, not even someone else's
    with pytest.raises(PlanRefused, match="cannot sign in batchpay-plan-v1"):
        signing.approve(batch, console.accounts, "mia", desk.settings, plan)
    assert approvals_of(batch) == []
    signing.approve(batch, console.accounts, "abe", desk.settings, plan)
    assert len(approvals_of(batch)) == 1


def test_an_approvers_file_kept_by_the_team_must_list_the_makers_key(
        desk_factory: Any, tmp_path: Path) -> None:
    from batchpay.console.signing import signer_line

    listed = tmp_path / "allowed_signers"
    desk = desk_factory(approvers_file=listed, require_approval=True)
    accounts = desk.app.state.console.accounts
    listed.write_text(signer_line(accounts, "abe") + "\n")
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    page = maker.http.get(f"/batches/{batch}").text
    assert "mia, who made this batch, cannot sign its plan" in page
    stored = desk.app.state.console.batches.get(batch)
    assert not stored.plan_files.plan.exists() and stored.meta["stage"] == "checked"
    listed.write_text(signer_line(accounts, "abe") + "\n" + signer_line(accounts, "mia") + "\n")
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert desk.client("abe").press(batch, "approve").status_code == 303
    assert maker.press(batch, "pay").status_code == 303


def test_binding_beyond_loopback_needs_tls_and_users(desk: Desk, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="HTTPS"):
        prepare(desk.settings, ServeOptions(host="0.0.0.0"), 8765)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("x"), key.write_text("x")
    fresh = desk.settings.with_options(journal=tmp_path / "other" / "journal.sqlite3")
    with pytest.raises(UsageError, match="user accounts"):
        prepare(fresh, ServeOptions(host="10.1.2.3", tls_cert=cert, tls_key=key), 8765)
    with pytest.raises(UsageError, match="--server-name"):
        prepare(desk.settings, ServeOptions(host="0.0.0.0", tls_cert=cert, tls_key=key), 8765)
    app, login, _ = prepare(desk.settings, ServeOptions(host="0.0.0.0", tls_cert=cert,
                                                        tls_key=key, server_name="pay.example"),
                            8765)
    assert login == "owner"


def test_an_uploaded_signature_approves_only_with_the_approvers_own_listed_key(
        desk: Desk) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from batchpay import sshsig
    from batchpay.controls.approval import NAMESPACE

    batch = reviewed_batch(desk, maker="mia")
    stored = desk.app.state.console.batches.get(batch)
    plan = stored.plan_files.plan.read_bytes()
    approver = desk.client("abe")
    stranger = sshsig.sign(Ed25519PrivateKey.generate(), plan, NAMESPACE)
    refused = approver.post(f"/batches/{batch}/signature", signature_text=stranger)
    assert refused.status_code == 409 and "not listed for abe" in refused.text
    maxs = sshsig.sign(desk.app.state.console.accounts.signing_key("max"), plan, NAMESPACE)
    assert approver.post(f"/batches/{batch}/signature", signature_text=maxs).status_code == 409
    assert approvals_of(stored) == []
    # abe's own key (as `ssh-keygen -Y sign` with it would make the signature)
    own = sshsig.sign(desk.app.state.console.accounts.signing_key("abe"), plan, NAMESPACE)
    assert approver.post(f"/batches/{batch}/signature", signature_text=own).status_code == 303
    stored = desk.app.state.console.batches.get(batch)
    assert stored.meta["stage"] == "approved" and len(approvals_of(stored)) == 1


def test_text_from_a_sheet_is_shown_as_text_never_as_markup(desk: Desk) -> None:
    signed = desk.client("mia")
    sheet = (b"payout_ref,recipient_type,recipient_name,account_number,bank_name,amount,"
             b"source_currency,reason\n"
             b"R-1,INDIVIDUAL,Li,<script>alert(1)</script>,Bank,100.00,NGN,Salary\n")
    batch = batch_id(signed.upload("evil.csv", data=sheet))
    page = signed.http.get(f"/batches/{batch}").text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_progress_stream_needs_a_session_and_ends_with_nothing_to_follow(desk: Desk) -> None:
    signed = desk.client("mia")
    batch = batch_id(signed.upload("november-payouts.xlsx"))
    stranger = TestClient(desk.app, base_url="https://testserver")
    assert stranger.get(f"/batches/{batch}/events").status_code == 403
    assert stranger.get(f"/batches/{batch}/progress").status_code == 403
    with signed.http.stream("GET", f"/batches/{batch}/events") as events:
        assert events.headers["content-type"].startswith("text/event-stream")
        text = "".join(events.iter_text())  # ends: this batch is not being paid
    assert "event: progress" in text and '"run_id": null' in text


def test_wrong_passwords_pause_that_names_sign_in_for_a_while(desk: Desk) -> None:
    """A few wrong passwords for one user name pause its sign-in, the right password too,
    and the page says so; another name signs in as before; after the pause it signs in."""
    from batchpay.console.sessions import SIGN_IN_PAUSE, SIGN_IN_TRIES, SignInThrottle

    now = [1000.0]
    desk.app.state.console.sign_ins = SignInThrottle(clock=lambda: now[0])
    client = TestClient(desk.app, base_url="https://testserver")

    def sign_in(name: str, password: str) -> Any:
        return client.post("/login", data={"name": name, "password": password},
                           follow_redirects=False)

    for _ in range(SIGN_IN_TRIES - 1):
        assert sign_in("abe", "a guess").status_code == 401
    last = sign_in("abe", "a guess")
    assert last.status_code == 429 and "signing in with it is paused for 15 minute(s)" in last.text
    right = sign_in("abe", PASSWORD)
    assert right.status_code == 429 and "set-cookie" not in right.headers
    assert int(right.headers["retry-after"]) == SIGN_IN_PAUSE
    assert "paused" in sign_in("Abe ", PASSWORD).text  # the same name, typed otherwise
    assert sign_in("mia", PASSWORD).status_code == 303
    now[0] += SIGN_IN_PAUSE
    again = sign_in("abe", PASSWORD)
    assert again.status_code == 303 and "__Host-batchpay-session=" in again.headers["set-cookie"]


def test_only_wrong_passwords_close_together_pause_a_name() -> None:
    from batchpay.console.sessions import SignInThrottle

    now = [0.0]
    throttle = SignInThrottle(tries=3, pause=60, clock=lambda: now[0])
    throttle.failed("abe")
    throttle.failed("abe")
    now[0] += 61
    throttle.failed("abe")  # the first two no longer count
    assert throttle.wait("abe") == 0
    throttle.succeeded("abe")  # a sign-in starts the count again
    throttle.failed("abe")
    throttle.failed("abe")
    assert throttle.wait("abe") == 0
    throttle.failed("abe")
    throttle.failed("nobody")  # a name no user has counts alike, and apart
    assert throttle.wait("abe") == 60 and throttle.wait("nobody") == 0


def test_an_uploaded_sheet_leaves_no_file_open(desk: Desk) -> None:
    """The form of a request is closed with it: an uploaded sheet's spooled file is not left
    for the garbage collector to find open."""
    import gc
    import warnings

    signed = desk.client("mia")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        batch_id(signed.upload("november-payouts.xlsx"))
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
            and "SpooledTemporaryFile" in str(w.message)] == []


def test_a_stale_login_link_and_an_idle_session_are_refused(
        desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchpay.console import sessions

    signed = desk.client("mia")
    token = desk.app.state.console.sessions.login_link("mia")
    monkeypatch.setattr(sessions, "LINK_SECONDS", -1)
    monkeypatch.setattr(sessions, "IDLE_SECONDS", -1)
    fresh = TestClient(desk.app, base_url="https://testserver")
    assert fresh.get(f"/login/{token}", follow_redirects=False).status_code == 403
    assert signed.http.get("/", follow_redirects=False).headers["location"] == "/login"


def test_the_console_is_tested_through_the_http_client_starlette_expects() -> None:
    """Starlette's TestClient runs on httpx2 (the test extra installs it); on httpx it warns
    that this is deprecated, and a later Starlette drops it."""
    import starlette.testclient

    assert starlette.testclient.httpx.__name__ == "httpx2"
