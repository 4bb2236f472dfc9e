"""Mutual TLS: the node's certificate served and shown to peers, and peers' pinned certificates."""
