-- message/send with a fresh messageId on every request, so each one creates a new task
-- (the node keeps (peer, messageId) idempotency keys). The id is the run's nonce, the wrk
-- thread's number, a per-thread counter and a random part.
-- Set by the preamble: bench_path, bench_headers, bench_nonce, bench_text_json.
wrk.method = "POST"
wrk.path = bench_path
wrk.headers = bench_headers

local threads = 0
function setup(thread)
  bench_target(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  math.randomseed(os.time() * 1000 + tid)
end

local counter = 0
function request()
  counter = counter + 1
  local message_id = string.format("%s-%d-%d-%x", bench_nonce, tid, counter,
                                   math.random(0, 2147483647))
  local body = string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"message/send","params":{"message":' ..
    '{"kind":"message","messageId":"%s","role":"user","parts":' ..
    '[{"kind":"text","text":%s}]}}}',
    counter, message_id, bench_text_json)
  return wrk.format(nil, nil, nil, body)
end
