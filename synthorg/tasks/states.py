"""The A2A task states this node distinguishes."""

TERMINAL = frozenset({"completed", "canceled", "failed", "rejected"})
