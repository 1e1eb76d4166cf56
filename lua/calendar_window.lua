--[[ calendar_window.lua: one request's calendar-window counts, kept as envoyproxy/ratelimit
keeps them (shortener_core::limiter::calendar::decide), so that their service and ours
count each limit once on one Redis.

KEYS[1..n]  their cache keys: the key's prefix, then the window's start in seconds since
            the Unix epoch (a key may appear twice, and then counts twice)
ARGV[1]     spending: "each" (every key counts every hit), "stop" (when some key would go
            over, only the keys that go over count), "all" (when some key would go over,
            none counts)
ARGV[2]     now_us: "" = Redis's own clock (TIME); a number = explicit time, for tests only
ARGV[3 + 5(i-1) ..]  for KEYS[i]: limit, hits, unit (seconds), expire (seconds: the unit
            plus their jitter), window (the start the caller put in the key)

Returns {1, now_us, before1, after1, over1, ..., beforen, aftern, overn}: each key's count
before this request and after it, and 1 when the key is over its limit with this request's
hits. Returns {0, now_us} and writes nothing when a key's window is not the one that holds
now (the caller's clock is off at a window's edge): the caller names the keys again.

The counts are theirs: a plain integer per key, raised with INCRBY and given EXPIRE of the
unit (plus jitter) at each write, as their fixed_cache_impl.go does.

Why a script: their service reads and writes the keys in separate round trips and on its
pod's clock, so two pods at a window's edge, or a read racing another pod's write, count
apart. Here the window is checked against Redis's clock and the whole request is one
atomic step.
]]

local now
if ARGV[2] == '' then
  local time = redis.call('TIME')
  now = time[1] * 1000000 + time[2]
else
  now = tonumber(ARGV[2])
end
local now_secs = math.floor(now / 1000000)

local limits, hits, units, expires = {}, {}, {}, {}
for i = 1, #KEYS do
  local base = 3 + 5 * (i - 1)
  limits[i] = tonumber(ARGV[base])
  hits[i] = tonumber(ARGV[base + 1])
  units[i] = tonumber(ARGV[base + 2])
  expires[i] = tonumber(ARGV[base + 3])
  if tonumber(ARGV[base + 4]) ~= now_secs - math.fmod(now_secs, units[i]) then
    return {0, now}
  end
end

-- Each key's count as read, then as if every hit counted: whether a hit goes over reads
-- the earlier hits of the same key in this request as counted.
local stored = {}
local running = {}
local over = {}
local any_over = false
for i, key in ipairs(KEYS) do
  if stored[key] == nil then
    stored[key] = tonumber(redis.call('GET', key)) or 0
    running[key] = stored[key]
  end
  over[i] = running[key] + hits[i] > limits[i]
  any_over = any_over or over[i]
  running[key] = running[key] + hits[i]
end

local spending = ARGV[1]
local reply = {1, now}
local counts = {}
for i, key in ipairs(KEYS) do
  local add = hits[i]
  if spending ~= 'each' and any_over and not (spending == 'stop' and over[i]) then
    add = 0
  end
  local before = counts[key] or stored[key]
  local after = before
  -- Their writes: INCRBY and EXPIRE for every key, even by 0 (ours, "all", skips those).
  if add > 0 or spending ~= 'all' then
    after = redis.call('INCRBY', key, add)
    redis.call('EXPIRE', key, expires[i])
  end
  counts[key] = after
  reply[#reply + 1] = before
  reply[#reply + 1] = after
  reply[#reply + 1] = over[i] and 1 or 0
end
return reply
