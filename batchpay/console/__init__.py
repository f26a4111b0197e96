"""`batchpay serve`: the month in a browser, for makers, approvers and auditors.

The console is a thin web front over the library the commands use; it holds no engine of
its own:

    accounts   users, roles, Argon2id password hashes, each user's server-held signing key
    sessions   one-time login links, server-side sessions, form tokens
    guard      what every request passes first: Host header, cross-site refusal, headers
    batches    an uploaded sheet's folder and state (checked, reviewed, approved, paying)
    work       the calls into the library: check, review, history, payees
    payment    Pay, a stopped payment found and resumed, progress, Refresh statuses
    follower   refreshes paid batches' rows until each is final, while the console runs
    wording    the engine's messages as a page says them (page actions, not commands)
    signing    the one place that calls the plan and approval library
    app        the console assembled: routes, the guard, the templates/ and static/
    page       what every handler stands on: the shared state, signed-in pages, render, roles
    *_pages    the pages and forms by area (translation only): signin, batch (upload to
               approval), payment, statement (history, statement, books), payee, admin
    server     binding (loopback, or TLS), the login link, uvicorn
    state      where users, sessions and batches are kept, chosen by the journal's address
    state_postgres, batches_postgres
               the same in the journal's PostgreSQL database: two consoles, one team
    sealed_keys
               the team's signing keys sealed in that database with the chain key's help
    moving     a file journal's console copied into the database (`journal copy`)

Everything lives beside the journal (its folder's `console/`), or in the journal's
PostgreSQL database, so the console and the commands share one journal: a sheet paid from
either is never paid twice.
"""
