--[[ token_bucket.lua: one exact token-bucket decision
(shortener_core::limiter::token_bucket::step) for one key.

KEYS[1]  the key of one quota for one client, e.g. rl:{203.0.113.9}:create
KEYS[2]  audit mode only: the key's write counter, e.g. rl:{203.0.113.9}:create:audit
ARGV[1]  capacity: tokens of burst
ARGV[2]  interval_us: microseconds for one token to refill
ARGV[3]  cost: tokens this request takes
ARGV[4]  now_us: "" = Redis's own clock (TIME); a number = explicit time, for tests only
         (it must not be behind Redis's clock, or the key expires as soon as it is written)
ARGV[5]  "1" = audit mode, else "0"
ARGV[6]  optional debt: tokens a node admitted on its own while Redis was out of reach,
         taken first whatever the bucket holds; a debt above the credit empties the
         bucket and moves its time ahead by the shortfall (it refills once that is
         paid); a refused request with a debt still writes the debited bucket
ARGV[7]  optional count n >= 1 (no debt, no audit): n requests of `cost` each, decided
         one after another at the same instant, as n calls arriving at once would be
         (a node's lease of up to n tokens is n requests of cost 1). The
         reply is then {credit before them, how many of them were admitted}: the first
         `admitted` are, each leaving `need` less credit, and the rest are refused with
         what the admitted left. One write for all of them.

Returns one integer, the bucket's credit (microseconds of refill) after the decision:
  credit >= 0 when admitted, -1 - credit when refused (nothing written without a debt).
The caller derives remaining, retry_after and reset_after from it and the policy
(Decision::from_credit); a cost above capacity is refused with the credit as it is.
In audit mode: {that integer, now_us, version}.
One integer is the cheapest reply Redis can build: an array of six cost more than the GET.

Stored state: the credit (microseconds of refill) and the time it was measured at, kept in
one integer value plus the key's expiry, so that Redis keeps the value unboxed (72 bytes a
key, like a counter). The key expires (PXAT, whole milliseconds) when the bucket is full
again, from when a missing key decides the same as the stored one:
  full_us   = at_us + burst_us - credit_us
  expire_ms = ceil(full_us / 1000)
  value     = the digits of credit_us, then 3 digits: expire_ms * 1000 - full_us
so that at_us = expire_ms * 1000 - (last 3 digits) - burst_us + credit_us, with expire_ms
from PEXPIRETIME. A refused request writes nothing. Every number computed with is an
integer below 2^53, exact in Lua's doubles (the value itself may exceed 2^53, so it is split
as a string, never converted whole).

Audit mode (tests): KEYS[1] is written exactly as in normal mode, and KEYS[2] counts the
writes to it; version is that count after this call. The counter expires a day after
KEYS[1] does, so it survives KEYS[1] expiring when the bucket fills up, and all decisions
on a key fall into one total order. Outside audit mode version is 0.

Why a script: the read, the decision and the write must be one atomic step, or two app
nodes reading the same bucket would both admit; and TIME inside the script makes Redis the
only clock (Redis 7 replicates the script's effects, not the script, so this is safe).
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

local credit, at = burst, now
local value = redis.call('GET', KEYS[1])
if value then
  local stored = tonumber(string.sub(value, 1, -4)) or 0
  local digits = tonumber(string.sub(value, -3))
  local expire_ms = redis.call('PEXPIRETIME', KEYS[1])
  if expire_ms < 0 then
    return redis.error_reply('rate limiter key ' .. KEYS[1] .. ' has no expiry')
  end
  local stored_at = expire_ms * 1000 - digits - burst + stored
  -- A clock that steps back is no time passing, never extra credit.
  if now > stored_at then
    credit = math.min(burst, stored + (now - stored_at))
  else
    credit = math.min(burst, stored)
    at = stored_at
  end
end

local debt = tonumber(ARGV[6] or '0') or 0
if debt > 0 then
  local owed = debt * interval
  if credit >= owed then
    credit = credit - owed
  else
    -- Empty, and refilling only once the rest is paid: the bucket's time moves ahead.
    at = at + (owed - credit)
    credit = 0
  end
end

-- Writes the bucket with `left` credit at `at` (and counts the write in audit mode).
local function store(left)
  local full = at + burst - left
  local below_ms = math.fmod(full, 1000)
  local expire_ms = (full - below_ms) / 1000
  local digits = 0
  if below_ms > 0 then
    expire_ms = expire_ms + 1
    digits = 1000 - below_ms
  end
  local stored
  if left > 0 then
    stored = string.format('%d%03d', left, digits)
  else
    stored = string.format('%d', digits)
  end
  redis.call('SET', KEYS[1], stored, 'PXAT', string.format('%d', expire_ms))
  if audit then
    version = version + 1
    local day_ms = 86400000
    redis.call('SET', KEYS[2], string.format('%d', version),
      'PXAT', string.format('%d', expire_ms + day_ms))
  end
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
    store(credit - admitted * need)
  end
  return {credit, admitted}
end
local admitted = cost <= capacity and need <= credit
if not admitted and debt == 0 then
  if audit then
    return {-1 - credit, now, version}
  end
  return -1 - credit
end
local left = credit
if admitted then
  left = credit - need
end
if cost > 0 or debt > 0 then
  store(left)
end
local reply = left
if not admitted then
  reply = -1 - credit
end
if audit then
  return {reply, now, version}
end
return reply
