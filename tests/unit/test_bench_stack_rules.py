"""The request profile's attribution (bench/stack_rules.py): py-spy raw lines to parts of the
node, each stack by its innermost frame a rule names, each thread's CPU by its own samples."""

from __future__ import annotations

from collections import Counter

from bench import stack_rules as rules

MAIN = ("thread (4242): MainThread;_run_module_as_main (<frozen runpy>:198);"
        "Runner.run (asyncio/runners.py:118);"
        "RequestResponseCycle.run_asgi (uvicorn/protocols/http/httptools_impl.py:422);"
        "NodeApp.__call__ (synthorg/web/app.py:70);"
        "Observed.__call__ (synthorg/observability/access.py:200);"
        "Gateway.__call__ (synthorg/gateway/endpoint.py:164)")
WRITER = ("thread (4243): synthorg-events;Thread._bootstrap (threading.py:1002);"
          "Thread.run (threading.py:982);LineWriter._run (synthorg/observability/writer.py:98)")
POOL = ("thread (4250): asyncio_0;Thread._bootstrap (threading.py:1002);"
        "_worker (concurrent/futures/thread.py:83)")


def parts(counts: Counter[rules.Decided]) -> dict[str, int]:
    found: Counter[str] = Counter()
    for (name, _), n in counts.items():
        found[name] += n
    return dict(found)


def test_the_innermost_named_frame_decides() -> None:
    lines = [
        f"{MAIN};Gateway._admit (synthorg/gateway/endpoint.py:236);"
        "PeerGate.check (synthorg/gateway/gates.py:152) 7",
        # json inside replies.py is the reply; a helper module is charged to its caller
        f"{MAIN};Gateway._reply (synthorg/gateway/endpoint.py:300);"
        "encoded (synthorg/gateway/replies.py:60);JSONEncoder.iterencode (json/encoder.py:258) 5",
        f"{MAIN};Gateway._admit (synthorg/gateway/endpoint.py:236);"
        "PeerGate.check (synthorg/gateway/gates.py:152);"
        "canonical_peer_name (synthorg/names.py:20) 2",
        # pydantic under the store is the store's, under the pipeline the validation's
        f"{MAIN};SqliteTaskStore.get (/srv/synthorg/store/sqlite/tasks.py:37);"
        "TypeAdapter.validate_python (/venv/lib/python3.11/site-packages/pydantic/"
        "type_adapter.py:410) 4",
        f"{MAIN};answer (synthorg/gateway/pipeline.py:302);"
        "TypeAdapter.validate_python (pydantic/type_adapter.py:410) 3",
        # uvicorn's send is the reply; the rest of uvicorn the server; the loop's own frame
        f"{MAIN};_counting_send.<locals>.counted (synthorg/observability/access.py:251);"
        "RequestResponseCycle.send (uvicorn/protocols/http/httptools_impl.py:524) 6",
        "thread (4242): MainThread;_run_module_as_main (<frozen runpy>:198);"
        "Runner.run (asyncio/runners.py:118);"
        "LimitedHttpToolsProtocol.data_received (synthorg/http/protocol.py:80) 8",
        "thread (4242): MainThread;_run_module_as_main (<frozen runpy>:198);"
        "Runner.run (asyncio/runners.py:118) 9",
        f"{MAIN} 1",
    ]
    tally = rules.tally(lines)
    assert list(tally.kept) == [4242]
    assert parts(tally.kept[4242]) == {rules.GATES: 9, rules.REPLY: 11, rules.STORE: 4,
                                       rules.PARSE: 3, rules.SERVER: 8, rules.LOOP: 9,
                                       rules.GLUE: 1}
    assert tally.kept[4242][rules.GATES, "PeerGate.check (synthorg/gateway/gates.py)"] == 9
    assert tally.kept[4242][rules.STORE, "SqliteTaskStore.get (/srv/synthorg/store/sqlite/"
                                         "tasks.py)"] == 4
    assert not tally.waiting and not tally.partial


def test_waits_are_counted_apart() -> None:
    lines = [
        f"{WRITER};Event.wait (threading.py:629);Condition.wait (threading.py:331) 40",
        f"{WRITER};LineWriter._drain (synthorg/observability/writer.py:112);"
        "LineWriter._write (synthorg/observability/writer.py:132) 6",
        f"{POOL} 3",
        # cut short at its outer end: still the store's
        "thread (4242): MainThread;Database.query_one (synthorg/store/sqlite/database.py:122) 2",
        # no thread frame (py-spy without --threads), a process frame (--subprocesses)
        'process 4242:"python -m synthorg.api";JSONDecoder.raw_decode (json/decoder.py:343) 2',
        "",
    ]
    tally = rules.tally(lines)
    assert {tid: parts(counts) for tid, counts in tally.kept.items()} == {
        4243: {rules.EVENTS: 6}, 4242: {rules.STORE: 2}, 0: {rules.OTHER: 2}}
    assert tally.kept[0] == {(rules.OTHER, "JSONDecoder.raw_decode (json/decoder.py)"): 2}
    assert {tid: parts(counts) for tid, counts in tally.waiting.items()} == {
        4243: {rules.EVENTS: 40}, 4250: {rules.OTHER: 3}}
    assert tally.partial == 4
    assert tally.samples() == 10 and tally.samples(4243, waiting=True) == 40


def test_each_threads_cpu_is_shared_by_its_own_samples() -> None:
    tally = rules.tally([
        f"{MAIN};PeerGate.check (synthorg/gateway/gates.py:152) 1",
        f"{MAIN};encoded (synthorg/gateway/replies.py:60) 3",
        f"{WRITER};Event.wait (threading.py:629);Condition.wait (threading.py:331) 50",
        f"{POOL};_WorkItem.run (concurrent/futures/thread.py:58);"
        "checkpoint_wal (synthorg/store/sqlite/database.py:334) 1",
        f"{POOL} 9",
    ])
    # the loop's 200 µs by its samples; the writer, only ever seen waiting, by its waits; the
    # pool thread by its one working sample; a thread never seen is "other"
    charged = rules.charge(tally, {4242: 200.0, 4243: 10.0, 4250: 4.0, -1: 1.0})
    assert rules.by_category(charged) == {rules.GATES: 50.0, rules.REPLY: 150.0,
                                          rules.EVENTS: 10.0, rules.STORE: 4.0, rules.OTHER: 1.0}
    assert charged[rules.REPLY, "encoded (synthorg/gateway/replies.py)"] == 150.0
