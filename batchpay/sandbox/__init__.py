"""The embedded payout service: a server of its own that batchpay's client talks to over
real HTTP, as it would to the real service.

It imports nothing of the client's side (provider/, sheet/, engine/), and two of its parts
repeat on purpose what the client also does, as independent oracles: the compliance checks
of a payout's Chinese identifiers (`checks`: the unified social credit code and resident ID
check characters, against sheet.china_ids) and the rate-limit windows (`faults`, against
provider.pacing). A mistake in the client's copy is then met by a service that disagrees,
and the contract tests (tests/provider/test_client_contract.py) fail, instead of both sides
sharing one mistake. What is a fact rather than a check is shared from the ground floor:
ISO 4217's minor units (batchpay.money), so the sheet and the sandbox agree on JPY's 0
decimals.
"""
