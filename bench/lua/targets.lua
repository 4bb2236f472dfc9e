-- Spread wrk's threads over several servers (replicas of one node): thread i connects to
-- bench_ports[i], round robin, each thread keeping its own connections to its server.
-- Set by the preamble when there are several: bench_ports = { port, port, ... }.
local target_threads = 0
function bench_target(thread)
  target_threads = target_threads + 1
  if bench_ports ~= nil then
    local port = bench_ports[((target_threads - 1) % #bench_ports) + 1]
    thread.addr = wrk.lookup("127.0.0.1", tostring(port))[1]
  end
end
