"""Agent cards: the ones this node publishes (projection, publisher) and its peers' (discovery).

Kept import-light: the transport middleware imports `agent_ids` from here on every process.
"""
