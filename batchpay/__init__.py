"""batchpay: pay a spreadsheet of recipients through a payout service, exactly once per row."""

__version__ = "0.1.0"
