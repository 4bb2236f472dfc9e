-- The same request on every request: wrk formats it once and resends it.
-- Set by the preamble: bench_path, bench_headers, bench_body, bench_method (POST unless set).
wrk.method = bench_method or "POST"
wrk.path = bench_path
wrk.headers = bench_headers
wrk.body = bench_body

function setup(thread)
  bench_target(thread)
end
