"""The live bench's parsers, on output captured from wrk 4.1 and h2load 1.52 (no wrk, h2load
or servers here)."""

from __future__ import annotations

import json
import re

import pytest

from bench.bindings import BenchError, parse_h2load
from bench.wrk import Load, lua_script, parse_summary, parse_wrk_text

WRK_OUTPUT = """\
Running 1s test @ http://127.0.0.1:35645/api/v1/a2a/
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   146.63ms  205.72ms 774.40ms   80.25%
    Req/Sec     1.08k   679.78     2.16k    66.67%
  1004 requests in 1.01s, 233.35KB read
  Socket errors: connect 0, read 3, write 0, timeout 2
  Non-2xx or 3xx responses: 1004
Requests/sec:    998.33
Transfer/sec:    232.03KB
BENCH-SUMMARY {"requests":1004,"duration_us":1005683,"bytes":238952,"errors":{"connect":0,\
"read":3,"write":0,"status":1004,"timeout":2},"latency_us":{"min":1002,"mean":146626.9,\
"stdev":205715.2,"max":774402,"p50":13035,"p90":512749,"p99":690099,"p999":765934}}
"""


def test_wrk_text() -> None:
    parsed = parse_wrk_text(WRK_OUTPUT)
    assert parsed["requests"] == 1004
    assert parsed["seconds"] == 1.01
    assert parsed["rps"] == 998.33
    assert parsed["non_2xx_3xx"] == 1004
    assert (parsed["socket_read"], parsed["socket_timeout"]) == (3, 2)


def test_wrk_text_without_errors() -> None:
    clean = "  10 requests in 500.00ms, 1.00KB read\nRequests/sec:     20.00\n"
    parsed = parse_wrk_text(clean)
    assert (parsed["requests"], parsed["seconds"], parsed["rps"]) == (10, 0.5, 20.0)
    assert parsed["non_2xx_3xx"] == 0 and parsed["socket_connect"] == 0


def test_lua_summary_line() -> None:
    summary = parse_summary(WRK_OUTPUT)
    assert summary["requests"] == 1004 and summary["duration_us"] == 1005683
    assert summary["errors"]["status"] == 1004
    assert summary["latency_us"]["p50"] == 13035
    assert summary["latency_us"]["p99"] == 690099
    assert summary["latency_us"]["mean"] == 146626.9


def test_lua_script_escapes_the_body() -> None:
    params = {"text": '1 "q" \\ é'}  # a digit right after a quote, a backslash, UTF-8
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "params": params}, ensure_ascii=False,
                      separators=(",", ":"))
    script = lua_script(Load({"X-API-Key": "k"}, body=body.encode()), "n0nce")
    line = next(line for line in script.splitlines() if line.startswith("bench_body = "))
    literal = line.removeprefix("bench_body = ")
    assert literal.isascii() and literal[0] == literal[-1] == '"'
    # Every escape is three decimal digits (so a digit after one is not swallowed into it),
    # and the quotes and backslashes are escaped: decoding them gives the body back.
    assert re.fullmatch(r'(?:[^"\\]|\\[0-9]{3})*', literal[1:-1])
    decoded = re.sub(rb"\\([0-9]{3})", lambda m: bytes([int(m[1])]), literal[1:-1].encode())
    assert decoded == body.encode()


H2LOAD_OUTPUT = """\
finished in 18.10ms, 2209.46 req/s, 177.79KB/s
requests: 40 total, 40 started, 40 done, 40 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 40 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 3.22KB (3296) total, 270B (270) headers (space savings 91.67%), 640B (640) data
                     min         max         mean         sd        +/- sd
time for request:      579us      6.52ms      1.70ms      2.02ms    80.00%
time for connect:       86us       199us       143us        80us   100.00%
"""


def test_h2load_report_with_one_reply_per_request() -> None:
    # 40 gRPC replies of an 11-byte message: 40 x (5 + 11) bytes of DATA.
    assert parse_h2load(H2LOAD_OUTPUT, 11) == (40, 2209.46, 1700.0)


def test_h2load_report_with_fewer_bytes_than_replies_is_refused() -> None:
    # A gRPC error is a 200 without a message: its bytes are missing from the DATA.
    with pytest.raises(BenchError, match="some calls failed"):
        parse_h2load(H2LOAD_OUTPUT, 12)
    failed = H2LOAD_OUTPUT.replace("40 succeeded, 0 failed", "38 succeeded, 2 failed")
    with pytest.raises(BenchError, match="2 failed"):
        parse_h2load(failed, 11)
    with pytest.raises(BenchError, match="no report"):
        parse_h2load("starting benchmark...\n", 11)


def test_a_fixed_load_may_be_a_get() -> None:
    script = lua_script(Load({}, method="GET", path="/api/v1/a2a/rest/tasks/t-1"), "n")
    assert 'bench_method = "GET"' in script and 'wrk.method = bench_method or "POST"' in script
