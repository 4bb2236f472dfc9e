"""The TypeScript client generated from the published spec (clients/typescript).

- Its generated sources are what the pinned generator makes of today's bundle (as
  `codegen --check` is for the Python side): a spec change without `make client-ts` fails.
- The package, its examples and its tests type-check with `tsc --strict`.
- Its own tests (`node --test`) pass against a live node this module starts on 127.0.0.1:
  cards, send, get, list, cancel, streams resumed after a dropped connection, push configs,
  every gate refusal, the rate limit's 429 with Retry-After, an unknown task, and the scenario
  list every generated client runs (tests/clients/scenarios.json).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from synthorg.contract.spec import bundled_openapi
from synthorg.push.signing import receiver_path
from synthorg.web.spec_routes import OPENAPI_JSON_PATH, openapi_resources
from tests.clients.typescript import (
    GENERATED,
    PACKAGE,
    ensure_dependencies,
    generate,
    run,
    tool,
    tsc,
)
from tests.integration.live import LiveNode
from tests.support.catalog import DEFAULT_ENDPOINT, add_peer
from tests.support.node import cli

SCENARIOS = Path(__file__).with_name("scenarios.json")
PEERS = {
    "main": ("ts-main", "key-ts-main-5b1e7c3a9d2f"),
    "bearer": ("ts-bearer", "key-ts-bearer-8e2a4c6b0d1f"),
    "limited": ("ts-limited", "key-ts-limited-3c9e1a7b5d4f"),
    "unlisted": ("ts-unlisted", "key-ts-unlisted-6d0f2b8a4c1e"),
}
AGENTS = {"echo": "echo", "parker": "parker", "writer": "writer", "replier": "replier"}
# The replier is an echo agent that answers with a Message instead of a Task.
DIRECT_REPLY_OPTIONS = "{reply: message}"
NODE_NAME = "ts-node"
CONFIG = f"""\
a2a:
  enabled: true
  node_name: {NODE_NAME}
  allowed_peers: [{", ".join(name for key, (name, _) in PEERS.items() if key != "unlisted")}]
  peer_rate_limit_burst: 2
agents:
  - {{id: echo, name: Echo, executor: {{kind: echo}}}}
  - {{id: parker, name: Parker, executor: {{kind: park}}}}
  - id: writer
    name: Writer
    executor:
      kind: python
      entrypoint: examples.slow_writer:factory
      options: {{seconds: 1, chunks: 5}}
  - {{id: replier, name: Replier, executor: {{kind: echo, options: {DIRECT_REPLY_OPTIONS}}}}}
"""


@pytest.fixture(scope="module")
def package() -> Path:
    ensure_dependencies()
    return PACKAGE


def bundle_bytes() -> bytes:
    """The document exactly as a node serves it at /openapi.json."""
    return openapi_resources(bundled_openapi())[OPENAPI_JSON_PATH].body


def test_generated_sources_are_what_the_generator_makes_of_the_spec(
    package: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "openapi.json"
    spec.write_bytes(bundle_bytes())
    out = tmp_path / "generated"
    generate(spec, out)
    fresh = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    committed = {p.name: p.read_bytes() for p in sorted(GENERATED.iterdir())}
    stale = sorted(name for name in fresh.keys() | committed.keys()
                   if fresh.get(name) != committed.get(name))
    assert stale == [], f"stale: clients/typescript/src/generated/{stale} (run `make client-ts`)"


def test_the_generated_types_carry_each_discriminator_value(package: Path) -> None:
    """With the spec's mappings, each variant's discriminating property is typed as its value
    (without them, openapi-typescript typed it as the schema's name)."""
    schema = (GENERATED / "schema.ts").read_text()
    for name, prop, value in [
        ("MessageSendRequest", "method", "message/send"),
        ("V1ListTasksParams", "method", "ListTasks"),
        ("TextPart", "kind", "text"),
        ("TaskStatusUpdateEvent", "kind", "status-update"),
    ]:
        block = re.search(rf"^        {name}: {{\n(.*?)^        }};", schema, re.M | re.S)
        assert block is not None, name
        assert f'{prop}: "{value}";' in block.group(1), name


def test_package_examples_and_tests_type_check_strictly(package: Path) -> None:
    tsc("-p", "tsconfig.json", "--noEmit", "--strict")


# A second generator reads the bundle as served: @hey-api/openapi-ts (its fetch client, types
# and SDK; 0.95.0 is its last release that runs on Node 20, pinned in package.json). Its output
# must type-check as strictly as the package does.
HEY_API_CONFIG = """\
export default {
  input: "openapi.json",
  output: { path: "client", importFileExtension: ".js" },
  plugins: ["@hey-api/client-fetch", "@hey-api/typescript", "@hey-api/sdk"],
};
"""
HEY_API_TSCONFIG = {
    "compilerOptions": {
        "target": "ES2022", "lib": ["ES2022", "DOM", "DOM.Iterable"], "module": "NodeNext",
        "moduleResolution": "NodeNext", "strict": True, "noEmit": True, "types": [],
    },
    "include": ["client"],
}


def test_a_second_generator_makes_a_client_that_type_checks(package: Path) -> None:
    work = PACKAGE / "build" / "second-generator"  # inside the package: its node_modules resolve
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "openapi.json").write_bytes(bundle_bytes())
    (work / "openapi-ts.config.mjs").write_text(HEY_API_CONFIG)
    (work / "tsconfig.json").write_text(json.dumps(HEY_API_TSCONFIG))
    generator = PACKAGE / "node_modules" / "@hey-api" / "openapi-ts" / "bin" / "run.js"
    result = run(tool("node"), str(generator), cwd=work)
    assert "error" not in (result.stdout + result.stderr).lower(), result.stdout + result.stderr
    types = (work / "client" / "types.gen.ts").read_text()
    assert "method: 'message/send';" in types  # the mapping's value, not a schema name
    tsc("-p", str(work / "tsconfig.json"))


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNode]:
    data_dir = tmp_path_factory.mktemp("ts-client-node")
    for name, key in PEERS.values():
        add_peer(data_dir, name, key)
    add_peer(data_dir, PEERS["bearer"][0], PEERS["bearer"][1], scheme="bearer")
    cli(data_dir, "peers", "update", PEERS["limited"][0], "--rate-limit", "1/s")
    with LiveNode(data_dir, CONFIG) as live:
        yield live


def test_the_package_tests_pass_against_a_live_node(
    package: Path, node: LiveNode, tmp_path: Path
) -> None:
    fixture = {
        "url": node.url,
        "peers": {role: {"name": name, "key": key} for role, (name, key) in PEERS.items()},
        "agents": AGENTS,
        "scenarios": str(SCENARIOS),
        # the owning peer's own receiver for this node's pushes: the one private url pushed to
        "pushUrl": DEFAULT_ENDPOINT + receiver_path(NODE_NAME),
    }
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(fixture))
    tsc("-p", "tsconfig.test.json")
    result = run(tool("node"), "--test", "--test-reporter=tap", "dist/test/",
                 env={"SYNTHORG_TEST_FIXTURE": str(path)}, check=False)
    output = result.stdout + result.stderr
    counts = dict(re.findall(r"^# (pass|fail|skipped|cancelled) (\d+)$", output, re.M))
    assert result.returncode == 0, output[-20000:]
    assert counts.get("fail") == "0" and counts.get("cancelled") == "0", output[-20000:]
    assert int(counts.get("pass", "0")) >= 56, output[-20000:]
    print(f"node --test: {counts}")
