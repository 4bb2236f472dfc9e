"""The operator's admin API and what it shares with the CLI.

- `token`: the admin token (`$SYNTHORG_ADMIN_TOKEN`, else a generated 0600 `admin.token`);
- `middleware`: the pure-ASGI gate on `/api/v1/admin` (token on headers, 404/405, body limits);
- `routes`: the admin paths and methods, read from the spec;
- `service`: settings and peer changes, validated, written and audited (API and CLI alike);
- `audit`: `audit.log` and the audit events;
- `guard`: the peer gate that never accepts the admin token;
- `client`: the admin API client behind `synthorg-a2a … --url`;
- `errors`: AdminError bodies.

The operations themselves are `handlers/admin.py`.
"""
