-- wrk script of the benchmark harness (`bench`, via `cargo xtask bench`), for every wrk run.
-- With BENCH_CREATE=1 every request creates a link (POST /api/v1/links, or
-- BENCH_CREATE_METHOD to BENCH_CREATE_PATH with BENCH_CREATE_BODY: another API's create,
-- an empty body sending none); with
-- BENCH_API_KEY set, requests carry it as X-API-Key, so that they are limited by the key's
-- tier instead of the client's IP address. With BENCH_CODES naming a file of codes (one
-- per line), every request is a GET of a random one of them (of each in turn,
-- round and round, with BENCH_SEQUENTIAL=1); BENCH_USER_AGENT is sent as
-- User-Agent, BENCH_REFERER as Referer. Otherwise wrk's plain GET of the URL.
-- `done` prints the run's figures as one JSON line, read by the harness instead of wrk's text.
if os.getenv("BENCH_CREATE") == "1" then
  wrk.method = os.getenv("BENCH_CREATE_METHOD") or "POST"
  wrk.path = os.getenv("BENCH_CREATE_PATH") or "/api/v1/links"
  local body = os.getenv("BENCH_CREATE_BODY") or '{"url":"https://example.com/created-by-wrk"}'
  if body ~= "" then
    wrk.body = body
    wrk.headers["Content-Type"] = "application/json"
  end
end
local key = os.getenv("BENCH_API_KEY")
if key ~= nil and key ~= "" then
  wrk.headers["X-API-Key"] = key
end
local codes_file = os.getenv("BENCH_CODES")
if codes_file ~= nil and codes_file ~= "" then
  local codes = {}
  for line in io.lines(codes_file) do
    codes[#codes + 1] = "/" .. line
  end
  if os.getenv("BENCH_SEQUENTIAL") == "1" then
    -- Every code in turn, round and round (with wrk -t1, one Lua state for all).
    local next = 0
    function request()
      next = next % #codes + 1
      return wrk.format("GET", codes[next])
    end
  else
    function request()
      return wrk.format("GET", codes[math.random(#codes)])
    end
  end
end
local agent = os.getenv("BENCH_USER_AGENT")
if agent ~= nil and agent ~= "" then
  wrk.headers["User-Agent"] = agent
end
local referer = os.getenv("BENCH_REFERER")
if referer ~= nil and referer ~= "" then
  wrk.headers["Referer"] = referer
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"rate":%.3f,"p50_ms":%.4f,"p99_ms":%.4f,"bad_statuses":%d,"socket_errors":%d}\n',
    summary.requests,
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    errors.status,
    errors.connect + errors.read + errors.write + errors.timeout))
end
