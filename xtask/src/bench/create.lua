-- wrk script of `cargo xtask bench`: every request creates a link (POST /api/v1/links).
-- With BENCH_API_KEY set, requests carry it as X-API-Key, so that they are limited by the
-- key's tier instead of the client's IP address.
wrk.method = "POST"
wrk.path = "/api/v1/links"
wrk.body = '{"url":"https://example.com/created-by-wrk"}'
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("BENCH_API_KEY")
if key ~= nil and key ~= "" then
  wrk.headers["X-API-Key"] = key
end
