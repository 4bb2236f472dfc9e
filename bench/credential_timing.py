"""Does the gate take longer to refuse one bad credential than another? In-process timing of
`PeerGate.check` over the real SQLite catalog, then a two-sample Kolmogorov-Smirnov test.

    python bench/credential_timing.py [--tries 10000]

Pairs compared, each without X-A2A-Peer-Name (the credential alone names the peer): an
unknown key against a known peer's key with its last character changed, and an unknown key
against a key of the same length sharing nothing with any secret; and, as a control, the
unknown key against itself. Tries are interleaved, in a shuffled order each round, so drift
in the machine hits every sample alike. Prints D, the 1% critical value, and whether they
differ: at 10,000 tries the test sees shifts of a few nanoseconds, so read each D beside the
control's.
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
import time
from pathlib import Path

from cryptography.fernet import Fernet

from synthorg.admin.token import AdminToken
from synthorg.gateway.credential_index import CredentialIndex
from synthorg.gateway.gates import PeerGate
from synthorg.store.secretbox import SecretBox
from synthorg.store.sqlite.catalog import SqliteCatalog
from synthorg.store.sqlite.database import open_database

SECRET = "alpha-link-secret-0c41e6b2a7f9"


def ks_statistic(a: list[float], b: list[float]) -> float:
    a, b = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            i += 1
        else:
            j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    return d


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tries", type=int, default=10_000)
    tries = parser.parse_args().tries
    with tempfile.TemporaryDirectory() as directory:
        db = open_database(Path(directory))
        catalog = SqliteCatalog(db, SecretBox(Fernet.generate_key()))
        for n in range(100):
            catalog.put(f"peer-{n}", "http://127.0.0.1:9", "api_key", f"{SECRET}-{n}")
        gate = PeerGate(frozenset(f"peer-{n}" for n in range(100)), catalog,
                        AdminToken.from_value(b"bench-admin-token-000000", "env"),
                        CredentialIndex(catalog))
        # "control" is the unknown key again: its D against "unknown" is the noise floor of
        # this machine, what a real difference must stand out from.
        cases = {"unknown": f"{SECRET}-x", "control": f"{SECRET}-x",
                 "near-miss": f"{SECRET}-5"[:-1] + "z", "unrelated": "z" * (len(SECRET) + 2)}
        samples: dict[str, list[float]] = {name: [] for name in cases}
        order = list(cases.items())
        shuffle = random.Random().shuffle
        for _ in range(tries):
            shuffle(order)  # no case always runs first in a round (warm caches favour the later)
            for name, key in order:
                headers = {"x-api-key": key}
                started = time.perf_counter_ns()
                gate.check(headers)
                samples[name].append(time.perf_counter_ns() - started)
        db.close()
    critical = 1.628 * math.sqrt(2 / tries)  # alpha = 0.01, equal sample sizes
    for other in ("control", "near-miss", "unrelated"):
        d = ks_statistic(samples["unknown"], samples[other])
        verdict = "differ" if d > critical else "same distribution"
        print(f"unknown vs {other}: D={d:.4f} critical(1%)={critical:.4f} -> {verdict}")
    for name, values in samples.items():
        values.sort()
        print(f"{name:10} median {values[len(values) // 2] / 1000:.1f} us")


if __name__ == "__main__":
    main()
