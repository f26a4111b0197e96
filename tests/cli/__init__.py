"""The face: commands end to end, settings, messages, --json, and the webhook listener."""
