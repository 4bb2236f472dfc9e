"""The A2A 0.3 dialect at the edge: one module per 0.3 JSON-RPC method (`tasks/get` ->
`tasks_get.py`), each with the `handle` the generated dispatch table routes it to.

The node's services speak A2A 1.0's objects, so each translates: the 0.3 params to the 1.0
call, and the 1.0 answer to the 0.3 result (`synthorg.dialects.objects`); a rule an operation
keeps in either dialect is `handlers/rules.py`'s, shared with the 1.0 handlers."""
