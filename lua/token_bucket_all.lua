--[[ token_bucket_all.lua: one all-or-nothing decision over several token buckets
(shortener_core::limiter::all::step_all): every request's cost is taken, or none.

KEYS[1..n]  the buckets, all in one cluster slot (one hash tag), stored exactly as by
            token_bucket.lua; a key may appear twice, and is then taken from twice
ARGV[1]     now_us: "" = Redis's own clock (TIME); a number = explicit time, for tests only
ARGV[2 + 4(i-1) ..]  for KEYS[i]: capacity, interval_us, cost, debt (tokens a node
            admitted on its own while Redis was out of reach, taken first whatever the
            bucket holds, and written even when the decision is refused)

Returns {admitted, r1, ..., rn}: admitted is 1 when every cost was taken, else 0 and only
the debts were written. ri is the credit (microseconds of refill) of KEYS[i]'s bucket
after the decision, or, when refused, as it now holds; ri >= 0 when that request alone
fits, -1 - credit when it does not.

The state's encoding is token_bucket.lua's, written out again here (a script cannot call
another); a change to one must be made to both.

Why a script: the reads, the decision and the writes of every bucket must be one atomic
step, or a request refused by its second bucket would still have spent its first, and two
nodes deciding together would both admit. TIME inside the script makes Redis the only
clock (Redis 7 replicates the script's effects, not the script).
]]

local now
if ARGV[1] == '' then
  local time = redis.call('TIME')
  now = time[1] * 1000000 + time[2]
else
  now = tonumber(ARGV[1])
end

-- The bucket of `key` as {credit, at}, decoded as token_bucket.lua stores it.
local function load(key, burst)
  local value = redis.call('GET', key)
  if not value then
    return burst, now
  end
  local stored = tonumber(string.sub(value, 1, -4)) or 0
  local digits = tonumber(string.sub(value, -3))
  local expire_ms = redis.call('PEXPIRETIME', key)
  if expire_ms < 0 then
    return nil
  end
  local stored_at = expire_ms * 1000 - digits - burst + stored
  if now > stored_at then
    return math.min(burst, stored + (now - stored_at)), now
  end
  return math.min(burst, stored), stored_at
end

-- Writes `key` with `left` credit at `at`, as token_bucket.lua does.
local function store(key, burst, left, at)
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
  redis.call('SET', key, stored, 'PXAT', string.format('%d', expire_ms))
end

-- Each bucket once, by key: {burst, credit, at}, as decided so far (`working`), and as
-- after the debts alone (`debited`).
local working, debited, fits, after = {}, {}, {}, {}
local admitted = true
for i, key in ipairs(KEYS) do
  local base = 2 + 4 * (i - 1)
  local capacity = tonumber(ARGV[base])
  local interval = tonumber(ARGV[base + 1])
  local cost = tonumber(ARGV[base + 2])
  local debt = tonumber(ARGV[base + 3])
  local burst = capacity * interval
  if not working[key] then
    local credit, at = load(key, burst)
    if not credit then
      return redis.error_reply('rate limiter key ' .. key .. ' has no expiry')
    end
    working[key] = {burst, credit, at, false}
    debited[key] = {burst, credit, at, false}
  end
  if debt > 0 then
    for _, state in ipairs({working[key], debited[key]}) do
      local owed = debt * interval
      if state[2] >= owed then
        state[2] = state[2] - owed
      else
        state[3] = state[3] + (owed - state[2])
        state[2] = 0
      end
      state[4] = true
    end
  end
  local need = cost * interval
  local state = working[key]
  if cost <= capacity and need <= state[2] then
    fits[i] = true
    if cost > 0 then
      state[2] = state[2] - need
      state[4] = true
    end
    after[i] = state[2]
  else
    fits[i] = false
    admitted = false
  end
end

local final = debited
if admitted then
  final = working
end
for key, state in pairs(final) do
  if state[4] then
    store(key, state[1], state[2], state[3])
  end
end

-- Replies: each request's credit after it (admitted), or its bucket's credit now.
local reply = {admitted and 1 or 0}
for i, key in ipairs(KEYS) do
  if admitted then
    reply[i + 1] = after[i]
  elseif fits[i] then
    reply[i + 1] = final[key][2]
  else
    reply[i + 1] = -1 - final[key][2]
  end
end
return reply
