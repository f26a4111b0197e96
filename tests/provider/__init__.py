"""batchpay.provider: the client of the payout service, its records and its pacing."""
