"""The protocol dialects spoken at the edge: the node keeps one model (A2A 0.3's objects) and
each other dialect maps its requests to it and its answers back (`v1.py`: A2A 1.0)."""
