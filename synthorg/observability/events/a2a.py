"""A2A event names. The first six are the seed guide's; keep them verbatim."""

from __future__ import annotations

from typing import Final

INBOUND_RECEIVED: Final = "a2a.inbound.received"
INBOUND_AUTH_FAILED: Final = "a2a.inbound.auth_failed"
JSONRPC_PARSE_ERROR: Final = "a2a.jsonrpc.parse_error"
JSONRPC_METHOD_NOT_FOUND: Final = "a2a.jsonrpc.method_not_found"
TASK_METHOD_REJECTED: Final = "a2a.task.method_rejected"
BOUNDARY_VALIDATION_FAILED: Final = "api.boundary.validation_failed"

# Transport refusals before the JSON-RPC layer (405, 413, 415, bad Content-Length).
INBOUND_REJECTED: Final = "a2a.inbound.rejected"
TASK_CREATED: Final = "a2a.task.created"
# An agent answered a new message directly with a Message; no task was stored: agent_id.
TASK_DIRECT_REPLY: Final = "a2a.task.direct_reply"
TASK_STATE_CHANGED: Final = "a2a.task.state_changed"
TASK_RECOVERED: Final = "a2a.task.recovered"
# An unfinished task of a runner that is gone, taken over and followed again: task_id.
TASK_RESUMED: Final = "a2a.task.resumed"
# A task taken over could not be resumed (it moved on meanwhile, canceled elsewhere, or the
# store failed): peer_name, task_id, error (the type only); the node's other work goes on.
TASK_RESUME_FAILED: Final = "a2a.task.resume_failed"
# A delegated task is no longer followed by stream (refused, invalid, or the peer away too
# long): peer_name, task_id (the peer's), reason; its follower polls instead.
FOLLOW_STREAM_ABANDONED: Final = "a2a.follow.stream_abandoned"
# An open stream ended because its caller is no longer admitted (removed, re-keyed, or off
# the allowlist): `reason` is the gate's.
STREAM_REVOKED: Final = "a2a.stream.revoked"
NODE_STARTED: Final = "a2a.node.started"
# The node stopped serving after a clean shutdown (SIGTERM, SIGINT): host, port, workers,
# uptime_seconds. A node killed (kill -9) writes nothing.
NODE_STOPPED: Final = "a2a.node.stopped"
# A node on a shared store listens before it can serve (its probes answer): host, port.
NODE_LISTENING: Final = "a2a.node.listening"
# The gRPC binding listens (server.grpc_port): host, port, tls.
GRPC_LISTENING: Final = "a2a.grpc.listening"
NODE_FAIL_OPEN: Final = "a2a.node.fail_open_warning"
TASK_EXECUTOR_FAILED: Final = "a2a.task.executor_failed"
INTERNAL_ERROR: Final = "a2a.inbound.internal_error"
# One per HTTP request, when its response is done (synthorg.observability.access): operation,
# method, status, peer_name, duration_ms, bytes_in, bytes_out, reason (a refusal's).
INBOUND_COMPLETED: Final = "a2a.inbound.completed"
# Push notifications: delivery_id, task_id, target host, attempt and reason where they apply.
PUSH_DELIVERED: Final = "a2a.push.delivered"
PUSH_RETRY_SCHEDULED: Final = "a2a.push.retry_scheduled"
PUSH_FAILED: Final = "a2a.push.failed"
PUSH_RECEIVED: Final = "a2a.push.received"
PUSH_REJECTED: Final = "a2a.push.rejected"
# The shared rate-limit buckets could not be reached: this process holds each peer to its
# share of the limit until they answer again (said once per process): error, share.
RATE_LIMIT_FALLBACK: Final = "a2a.rate_limit.fallback"
# The maintenance pass removed finished deliveries and old receipts: outbox, receipts (counts).
PUSH_PRUNED: Final = "a2a.push.pruned"
