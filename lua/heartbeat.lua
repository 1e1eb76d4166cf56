--[[ heartbeat.lua: one node says it is alive; replies with the number of live nodes.

KEYS[1]  the sorted set of nodes, e.g. rl:nodes (one key, so one slot in a cluster)
ARGV[1]  this node's id (random per process)
ARGV[2]  window_ms: a node not heard from for this long is gone

Returns the number of nodes heard from within the window, this one included.

Each member is scored with the Redis time of its last heartbeat, in milliseconds; members
older than the window are removed, and the whole set expires a window after the last
heartbeat, so a deployment that is gone leaves nothing behind.

Why a script: the clock is Redis's (TIME), so the nodes' clocks do not matter, and the
write, the pruning and the count are one step.
]]

local window = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - window))
redis.call('PEXPIRE', KEYS[1], window)
return redis.call('ZCARD', KEYS[1])
