"""The operator's admin API and what it shares with the CLI.

- `token`: the admin token (`$SYNTHORG_ADMIN_TOKEN`, else a generated 0600 `admin.token`);
- `gate`: the pure-ASGI gate on `/api/v1/admin` (token on headers, 404/405, body limits),
  its routes read from the spec's operations;
- `service`: settings and peer changes, validated, written and audited (API and CLI alike);
- `api`: the admin operations' context (`handlers.context.AdminContext`) over the service;
- `audit`: the audit trail (records in the store) and the audit events.

The operations themselves are `handlers/admin.py`; the peer gate that never accepts the
admin token is `synthorg/gateway/gates.py`; the CLI's admin API client is
`synthorg/cli/admin_client.py`.
"""
