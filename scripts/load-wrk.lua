-- wrk script for scripts/load-wrk: POSTs the file in WRK_BODY (or GETs
-- when WRK_BODY is empty) and, when done, prints one machine-readable line:
--   RESULT requests=N rps=R p50_ms=.. p90_ms=.. p99_ms=.. max_ms=.. errors=E non2xx=S
-- WRK_CONTENT_TYPE sets Content-Type (default application/json);
-- WRK_HEADER_LENGTH sets Inference-Header-Content-Length (Triton's binary
-- tensor extension).

local path = os.getenv("WRK_BODY") or ""
if path ~= "" then
  local f = assert(io.open(path, "rb"))
  wrk.method = "POST"
  wrk.body = f:read("*a")
  f:close()
  wrk.headers["Content-Type"] = os.getenv("WRK_CONTENT_TYPE") or "application/json"
  local hl = os.getenv("WRK_HEADER_LENGTH") or ""
  if hl ~= "" then
    wrk.headers["Inference-Header-Content-Length"] = hl
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    "RESULT requests=%d rps=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%d non2xx=%d\n",
    summary.requests, summary.requests / secs,
    latency:percentile(50) / 1e3, latency:percentile(90) / 1e3,
    latency:percentile(99) / 1e3, latency.max / 1e3,
    e.connect + e.read + e.write + e.timeout, e.status))
end
