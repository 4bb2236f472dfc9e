"""Example agents for `executor: {kind: python, entrypoint: ...}`; not part of the runtime."""
