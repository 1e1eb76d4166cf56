--[[ gcra.lua: one exact GCRA decision (shortener_core::limiter::gcra::step) for one key.

KEYS[1]  the key of one quota for one client, e.g. rl:{203.0.113.9}:create
KEYS[2]  audit mode only: the key's write counter, e.g. rl:{203.0.113.9}:create:audit
ARGV[1]  capacity: tokens of burst
ARGV[2]  interval_us: microseconds for one token to refill
ARGV[3]  cost: tokens this request takes
ARGV[4]  now_us: "" = Redis's own clock (TIME); a number = explicit time, for tests only
         (it must not be behind Redis's clock, or the key expires as soon as it is written)
ARGV[5]  "1" = audit mode, else "0"

Returns {allowed (0/1), remaining, retry_after_us (-1 = never: cost above capacity),
         reset_after_us, now_us, version}.

Stored value: the theoretical arrival time (TAT) in integer microseconds, one integer that
Redis keeps unboxed. The key expires (PXAT) when the bucket is full again, from when a
missing key decides the same as the stored one. A refused request writes nothing.
Every number is an integer below 2^53, exact in Lua's doubles.

Audit mode (tests): KEYS[1] is written exactly as in normal mode, and KEYS[2] counts the
writes to it; version is that count after this call. The counter expires a day after
KEYS[1] does, so it survives KEYS[1] expiring when the bucket fills up, and all decisions
on a key fall into one total order. Outside audit mode version is 0.

Why a script: the read, the decision and the write must be one atomic step, or two app
nodes reading the same TAT would both admit; and TIME inside the script makes Redis the only
clock (Redis 7 replicates the script's effects, not the script, so this is safe).
]]

local capacity = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local audit = ARGV[5] == '1'
local now
if ARGV[4] == '' then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
else
  now = tonumber(ARGV[4])
end
local burst = capacity * interval

-- Whole tokens in a credit; fmod is exact on doubles, so this division is too.
local function tokens(credit)
  return (credit - math.fmod(credit, interval)) / interval
end

local version = 0
if audit then
  version = tonumber(redis.call('GET', KEYS[2]) or '0')
end

-- A TAT more than a burst ahead can only come from a clock that stepped back.
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
tat = math.min(math.max(tat, now), now + burst)
local credit = burst - (tat - now)

if cost > capacity then
  return {0, tokens(credit), -1, burst - credit, now, version}
end
local need = cost * interval
if need > credit then
  return {0, tokens(credit), need - credit, burst - credit, now, version}
end
if cost > 0 then
  tat = tat + need
  local below_ms = math.fmod(tat, 1000)
  local expire_ms = (tat - below_ms) / 1000
  if below_ms > 0 then
    expire_ms = expire_ms + 1
  end
  redis.call('SET', KEYS[1], string.format('%d', tat), 'PXAT', string.format('%d', expire_ms))
  if audit then
    version = version + 1
    local day_ms = 86400000
    redis.call('SET', KEYS[2], string.format('%d', version),
      'PXAT', string.format('%d', expire_ms + day_ms))
  end
end
local left = credit - need
return {1, tokens(left), 0, burst - left, now, version}
