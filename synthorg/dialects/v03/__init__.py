"""The A2A 0.3 dialect at the edge: one module per 0.3 JSON-RPC method (`tasks/get` ->
`tasks_get.py`), each with the `handle` the generated dispatch table routes it to.

The node's services speak 0.3's objects, so these call them as they are; a rule an operation
keeps in either dialect is `handlers/rules.py`'s, shared with the 1.0 handlers."""
