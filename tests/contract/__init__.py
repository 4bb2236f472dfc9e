"""Contract tests: Schemathesis fuzzes the JSON-RPC endpoint against spec/ (in process and live)."""
