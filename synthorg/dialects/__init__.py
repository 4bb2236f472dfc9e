"""The protocol dialects at the edge: `v03/` answers A2A 0.3's methods (the A2A 1.0
operations are `handlers/`), `objects.py` maps the objects of either version to the other's,
`outbound_v03.py` makes this node's calls (built in 1.0) to a 0.3 peer, `outbound.py` picks a
peer's binding and dialect, `errors.py` writes 1.0's error details."""
