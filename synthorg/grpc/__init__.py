"""A2A 1.0's gRPC binding (`server.grpc_port`): the same operations, gates and limits as the
JSON-RPC endpoint, in the same process and event loop."""
