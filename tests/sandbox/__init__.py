"""batchpay.sandbox: the sandbox service over real HTTP, its faults and its life cycle."""
