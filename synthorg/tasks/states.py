"""The A2A task states this node distinguishes."""

from synthorg.store.tasks import TERMINAL_STATES

TERMINAL = TERMINAL_STATES
