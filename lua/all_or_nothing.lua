--[[ all_or_nothing.lua: one all-or-nothing decision over several buckets
(shortener_core::limiter::all::step_all): every request's cost is taken, or none.

KEYS[1..n]  the buckets, all in one cluster slot (one hash tag); a key may appear twice,
            and is then taken from twice
ARGV[1]     now_us: "" = Redis's own clock (TIME); a number = explicit time, for tests only
ARGV[2 + 5(i-1) ..]  for KEYS[i]: kind, capacity, span, cost, debt, where
            kind  "b": a token bucket, stored exactly as by token_bucket.lua, span being
                  the emission interval (microseconds for one token to refill);
                  "g": GCRA, stored exactly as by gcra.lua (one TAT), same span;
                  "w": a fixed window of span microseconds (a whole number of seconds),
                  aligned on the Unix epoch, stored as the count taken in it, the key
                  expiring at the window's end
            debt  tokens a node admitted on its own while Redis was out of reach, taken
                  first whatever the bucket holds, and written even when the decision is
                  refused

Returns {admitted, now_us, r1, ..., rn}: admitted is 1 when every cost was taken, else 0
and only the debts were written. For a bucket (b, g), ri is its credit (microseconds of
refill) after the decision, or, when refused, as it now holds; for a window, ri is its
count after the decision, or as it now holds. ri >= 0 when that request alone fits,
-1 - ri when it does not. now_us lets the caller tell when a window ends.

The encodings are token_bucket.lua's and gcra.lua's, written out again here (a script
cannot call another); a change to one must be made to both. A key holds one kind: the
caller names keys by kind, so a limit whose algorithm changes starts afresh.

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

-- A token bucket's key as {credit, at}, decoded as token_bucket.lua stores it.
local function load_bucket(key, burst)
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

-- Writes a token bucket's key with `left` credit at `at`, as token_bucket.lua does.
local function store_bucket(key, burst, left, at)
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

-- A GCRA key as the same {credit, at}: the bucket is full at its TAT, and a TAT more
-- than a burst ahead is a debt being paid (no credit until then).
local function load_tat(key, burst)
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then
    tat = now
  end
  if tat - now > burst then
    return 0, tat - burst
  end
  return burst - (tat - now), now
end

-- Writes a GCRA key as gcra.lua does: the TAT, expiring when the bucket is full.
local function store_tat(key, burst, left, at)
  local tat = at + burst - left
  redis.call('SET', key, string.format('%d', tat), 'PXAT', string.format('%d', math.ceil(tat / 1000)))
end

-- A window key's count in the window that holds now: a key that expires at another
-- time is another window's.
local function load_window(key, span)
  local ends = now - math.fmod(now, span) + span
  local value = redis.call('GET', key)
  if value and redis.call('PEXPIRETIME', key) == ends / 1000 then
    return tonumber(value) or 0, ends
  end
  return 0, ends
end

local function store_window(key, count, ends)
  redis.call('SET', key, string.format('%d', count), 'PXAT', string.format('%d', ends / 1000))
end

-- Each key once: {kind, size, amount, at, written}, where size is a bucket's burst or a
-- window's span, amount its credit or count, and at its time or end; as decided so far
-- (`working`) and as after the debts alone (`debited`).
local working, debited, fits, after = {}, {}, {}, {}
local admitted = true
for i, key in ipairs(KEYS) do
  local base = 2 + 5 * (i - 1)
  local kind = ARGV[base]
  local capacity = tonumber(ARGV[base + 1])
  local span = tonumber(ARGV[base + 2])
  local cost = tonumber(ARGV[base + 3])
  local debt = tonumber(ARGV[base + 4])
  if not working[key] then
    local size, amount, at
    if kind == 'w' then
      size = span
      amount, at = load_window(key, span)
    else
      size = capacity * span
      if kind == 'g' then
        amount, at = load_tat(key, size)
      else
        amount, at = load_bucket(key, size)
      end
      if not amount then
        return redis.error_reply('rate limiter key ' .. key .. ' has no expiry')
      end
    end
    working[key] = {kind, size, amount, at, false}
    debited[key] = {kind, size, amount, at, false}
  end
  if debt > 0 then
    for _, state in ipairs({working[key], debited[key]}) do
      if kind == 'w' then
        state[3] = state[3] + debt
      else
        local owed = debt * span
        if state[3] >= owed then
          state[3] = state[3] - owed
        else
          state[4] = state[4] + (owed - state[3])
          state[3] = 0
        end
      end
      state[5] = true
    end
  end
  local state = working[key]
  local ok
  if kind == 'w' then
    ok = state[3] + cost <= capacity
  else
    ok = cost <= capacity and cost * span <= state[3]
  end
  if ok then
    fits[i] = true
    if cost > 0 then
      if kind == 'w' then
        state[3] = state[3] + cost
      else
        state[3] = state[3] - cost * span
      end
      state[5] = true
    end
    after[i] = state[3]
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
  if state[5] then
    if state[1] == 'w' then
      store_window(key, state[3], state[4])
    elseif state[1] == 'g' then
      store_tat(key, state[2], state[3], state[4])
    else
      store_bucket(key, state[2], state[3], state[4])
    end
  end
end

-- Replies: each request's amount after it (admitted), or its key's amount now.
local reply = {admitted and 1 or 0, now}
for i, key in ipairs(KEYS) do
  if admitted then
    reply[i + 2] = after[i]
  elseif fits[i] then
    reply[i + 2] = final[key][3]
  else
    reply[i + 2] = -1 - final[key][3]
  end
end
return reply
