-- After the run: one machine-readable line, BENCH-SUMMARY {json}, latencies in microseconds.
local function n(x)  -- NaN or infinity (no requests completed) as -1: keeps the line JSON
  if x ~= x or x == math.huge or x == -math.huge then return -1 end
  return x
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH-SUMMARY {"requests":%.0f,"duration_us":%.0f,"bytes":%.0f,' ..
    '"errors":{"connect":%.0f,"read":%.0f,"write":%.0f,"status":%.0f,"timeout":%.0f},' ..
    '"latency_us":{"min":%.0f,"mean":%.1f,"stdev":%.1f,"max":%.0f,' ..
    '"p50":%.0f,"p90":%.0f,"p99":%.0f,"p999":%.0f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    n(latency.min), n(latency.mean), n(latency.stdev), n(latency.max),
    n(latency:percentile(50)), n(latency:percentile(90)), n(latency:percentile(99)),
    n(latency:percentile(99.9))))
end
