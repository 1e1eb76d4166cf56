--[[ gcra.lua: one exact GCRA decision (shortener_core::limiter::gcra::step) for one key.

KEYS[1]  the key of one quota for one client, e.g. rl:{203.0.113.9}:create
KEYS[2]  audit mode only: the key's write counter, e.g. rl:{203.0.113.9}:create:audit
ARGV[1]  capacity: tokens of burst
ARGV[2]  interval_us: microseconds for one token to refill
ARGV[3]  cost: tokens this request takes
ARGV[4]  now_us: "" = Redis's own clock (TIME); a number = explicit time, for tests only
         (it must not be behind Redis's clock, or the key expires as soon as it is written)
ARGV[5]  "1" = audit mode, else "0"
ARGV[6]  optional debt: tokens a node admitted on its own while Redis was out of reach,
         taken first whatever the bucket holds (the TAT may go more than a burst ahead,
         and the bucket refills once it is paid); a refused request with a debt still
         writes the debited TAT
ARGV[7]  optional count n >= 1 (no debt, no audit): n requests of `cost` each, decided
         one after another at the same instant, as n calls arriving at once would be
         (a node's lease of up to n tokens is n requests of cost 1). The
         reply is then {credit before them, how many of them were admitted}: the first
         `admitted` are, each moving the TAT `need` ahead, and the rest are refused with
         the credit the admitted left. One write for all of them.

Returns one integer, the bucket's credit (microseconds of refill) after the decision:
  credit >= 0 when admitted, -1 - credit when refused (nothing written without a debt).
The caller derives remaining, retry_after and reset_after from it and the policy
(Decision::from_credit); a cost above capacity is refused with the credit as it is.
In audit mode: {that integer, now_us, version}.
One integer is the cheapest reply Redis can build: an array of six cost more than the GET.

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
  now = time[1] * 1000000 + time[2]
else
  now = tonumber(ARGV[4])
end
local burst = capacity * interval

local version = 0
if audit then
  version = tonumber(redis.call('GET', KEYS[2]) or '0')
end

-- A TAT more than a burst ahead is a debt being paid, or a clock that stepped back: no
-- credit either way until the time catches up.
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then
  tat = now
end
local debt = tonumber(ARGV[6] or '0') or 0
if debt > 0 then
  tat = tat + debt * interval
end
local credit = burst - (tat - now)
if credit < 0 then
  credit = 0
end
local need = cost * interval
local count = tonumber(ARGV[7] or '0') or 0
if count > 0 then
  -- As one by one the single decisions would: the most whole costs the credit holds (a
  -- cost above capacity needs more than a full bucket and admits none, a cost of 0 admits
  -- all). The quotient of doubles may round across an integer, so the exact integer
  -- products (below 2^53) correct it.
  local admitted = count
  if need > 0 then
    admitted = math.floor(credit / need)
    while admitted > 0 and admitted * need > credit do
      admitted = admitted - 1
    end
    while admitted < count and (admitted + 1) * need <= credit do
      admitted = admitted + 1
    end
    admitted = math.min(count, admitted)
  end
  if admitted > 0 and need > 0 then
    tat = tat + admitted * need
    redis.call('SET', KEYS[1], tat, 'PXAT', math.ceil(tat / 1000))
  end
  return {credit, admitted}
end
local reply
local write = debt > 0
if cost > capacity or need > credit then
  reply = -1 - credit
else
  reply = credit - need
  if cost > 0 then
    tat = tat + need
    write = true
  end
end
if write then
  -- Numbers go to Redis as "%.17g", exact for integers below 2^53; tat / 1000 is at
  -- least 0.001 from the next integer unless it is one, so ceil is exact too.
  local expire_ms = math.ceil(tat / 1000)
  redis.call('SET', KEYS[1], tat, 'PXAT', expire_ms)
  if audit then
    version = version + 1
    redis.call('SET', KEYS[2], version, 'PXAT', expire_ms + 86400000)
  end
end
if audit then
  return {reply, now, version}
end
return reply
