"""Hand-written handlers: one module per A2A 1.0 operation and per extension method (the
generated dispatch table routes to each), the HTTP operations the spec names by operationId,
the rules both dialects keep (`rules.py`) and what a handler may see (`context.py`)."""
