"""Hand-written operation handlers named by the spec and the generated dispatch table."""
