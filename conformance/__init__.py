"""Running the official A2A conformance kit (TCK) against a node: `make tck`."""
