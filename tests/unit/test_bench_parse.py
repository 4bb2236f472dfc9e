"""The live bench's parsers, on output captured from wrk 4.1 (no wrk, no servers here)."""

from __future__ import annotations

import json
import re

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
