// The Lua steps of the Redis cluster state (docs/operations.md#redis): each check-and-change is one script,
// so instances racing on the same scope or channel see one order. Registered with ioredis's
// defineCommand (EVALSHA, loaded again by EVAL after a Redis restart flushed its script cache).
// Every key a script touches is passed in KEYS.
import type { Redis } from "ioredis";

/** points are decimals: sums of 0.05 must not refuse the request that exactly fills a budget */
const EPSILON = "1e-9";

/**
 * Admission: a request's budgets and rate windows in one step, all or nothing — every check first,
 * then every change, so a refused request holds no budget and counts no hit.
 * A budget is a hash per scope: `spent` (settled points) and `h:<instance>` (the points each instance
 * holds for its requests in flight). Holds of an instance not seen for the liveness window are
 * dropped, so a crashed instance's holds drain.
 * A rate window is a hash of per-second counters `0`..`59`, their sum `s` and the newest second `h` —
 * the in-process RateWindow's algorithm, so a hit costs O(1) (at most 60 counters cleared).
 * KEYS: instances (sorted set, last seen), then one hash per budget, then one per window.
 * ARGV: instance, the least points, liveness (ms), budget ttl (ms), number of budgets, now (ms),
 * window ttl (ms), the most points, the least and most tokens, a minute's ttl (ms), then each
 * budget's max and whether it counts tokens (1: a minute's tokens, its spent starting at 0), then
 * each window's limit. Serve until spent, per unit: the hold is the most where every budget has
 * room, else the tightest budget's room, never below the least (most below least: most, a check
 * that may hold nothing).
 * Returns {0, held, heldTokens} (admitted; decimal strings), {1, k} (budget k refused), {2, k,
 * retryAfterMs} (window k refused) or
 * {3, k} (budget k's spent is not loaded yet: nothing checked or changed).
 */
const ADMIT = `
local me, budgets = ARGV[1], tonumber(ARGV[5])
-- per unit (1 points, 2 tokens): the least, the most, the room left, the key's ttl
local least = {tonumber(ARGV[2]), tonumber(ARGV[9])}
local most = {tonumber(ARGV[8]), tonumber(ARGV[10])}
local room = {nil, nil}
local ttl = {ARGV[4], ARGV[11]}
local unit = {}
local now = tonumber(ARGV[6])
for k = 1, budgets do
  unit[k] = ARGV[11 + 2 * k] == '1' and 2 or 1
  if unit[k] == 2 then
    if redis.call('HSETNX', KEYS[k + 1], 'spent', '0') == 1 then redis.call('PEXPIRE', KEYS[k + 1], ARGV[11]) end
  elseif redis.call('HEXISTS', KEYS[k + 1], 'spent') == 0 then
    return {3, k}
  end
end
if budgets > 0 then
  local t = redis.call('TIME')
  local clock = t[1] * 1000 + math.floor(t[2] / 1000)
  redis.call('ZADD', KEYS[1], clock, me)
  local cutoff = clock - tonumber(ARGV[3])
  for k = 1, budgets do
    local fields = redis.call('HGETALL', KEYS[k + 1])
    local spent, held = 0, 0
    for j = 1, #fields, 2 do
      local field = fields[j]
      if field == 'spent' then
        spent = tonumber(fields[j + 1])
      elseif string.sub(field, 1, 2) == 'h:' then
        local seen = tonumber(redis.call('ZSCORE', KEYS[1], string.sub(field, 3)) or '0')
        if seen < cutoff then redis.call('HDEL', KEYS[k + 1], field) else held = held + tonumber(fields[j + 1]) end
      end
    end
    local max, u = tonumber(ARGV[10 + 2 * k]), unit[k]
    if spent >= max or spent + held + least[u] > max + ${EPSILON} then return {1, k} end
    if room[u] == nil or max - spent - held < room[u] then room[u] = max - spent - held end
  end
end
-- each window moved to now (counters of seconds that left it cleared); the second a hit counts at
local heads, sums, seconds = {}, {}, {}
for w = 1, #KEYS - 1 - budgets do
  local window = KEYS[1 + budgets + w]
  local second = math.floor(now / 1000)
  local state = redis.call('HMGET', window, 'h', 's')
  local head, sum = tonumber(state[1]), tonumber(state[2] or '0')
  if head == nil or second - head >= 60 then
    redis.call('DEL', window)
    head, sum = second, 0
  elseif second > head then
    for s = head + 1, second do
      local field = tostring(s % 60)
      local count = tonumber(redis.call('HGET', window, field) or '0')
      if count > 0 then
        sum = sum - count
        redis.call('HDEL', window, field)
      end
    end
    head = second
  elseif second <= head - 60 then
    -- a clock far behind the others': counted at the oldest second still in the window
    second = head - 59
  end
  if sum >= tonumber(ARGV[11 + 2 * budgets + w]) then
    for s = head - 59, head do
      if tonumber(redis.call('HGET', window, tostring(s % 60)) or '0') > 0 then
        return {2, w, (s + 60) * 1000 - now}
      end
    end
    return {2, w, (head + 1) * 1000 - now}
  end
  heads[w], sums[w], seconds[w] = head, sum, second
end
-- serve until spent: the most the tightest budget has room for, never less than the least
local written = {}
for u = 1, 2 do
  local hold = most[u]
  if room[u] ~= nil and room[u] < hold then hold = room[u] end
  if hold < least[u] then hold = least[u] end
  if most[u] < least[u] then hold = most[u] end
  written[u] = string.format('%.17g', hold)
end
for k = 1, budgets do
  if tonumber(written[unit[k]]) > 0 then redis.call('HINCRBYFLOAT', KEYS[k + 1], 'h:' .. me, written[unit[k]]) end
  redis.call('PEXPIRE', KEYS[k + 1], ttl[unit[k]])
end
for w = 1, #heads do
  local window = KEYS[1 + budgets + w]
  redis.call('HINCRBY', window, tostring(seconds[w] % 60), 1)
  redis.call('HSET', window, 'h', heads[w], 's', sums[w] + 1)
  redis.call('PEXPIRE', window, ARGV[7])
end
return {0, written[1], written[2]}
`;

/**
 * Settling: the held points leave this instance's hold, the actual points join `spent` (where spent
 * is loaded; otherwise the store's count, read at the next reservation, has them).
 * KEYS: one hash per scope. ARGV: instance, change of the hold (negative: released; positive: held
 * again, see redis-budgets.ts), actual, ttl (ms) — points as the caller wrote them (Lua would round
 * a number it formats to 14 digits).
 */
const SETTLE = `
local mine = 'h:' .. ARGV[1]
for i = 1, #KEYS do
  if redis.call('HEXISTS', KEYS[i], 'spent') == 1 and tonumber(ARGV[3]) > 0 then
    redis.call('HINCRBYFLOAT', KEYS[i], 'spent', ARGV[3])
  end
  local left = tonumber(redis.call('HINCRBYFLOAT', KEYS[i], mine, ARGV[2]))
  if left <= ${EPSILON} then redis.call('HDEL', KEYS[i], mine) end
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[4]) end
end
return 0
`;

/**
 * Mends one scope after a failed or unanswered command, or a reconnect: this instance's hold is
 * written as the total it knows it holds, and (`forget` = 1) spent is dropped to be loaded from the
 * store again, as an unanswered settle may or may not have counted.
 * KEYS: instances, scope. ARGV: instance, hold, forget, ttl (ms).
 */
const REPAIR = `
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], t[1] * 1000 + math.floor(t[2] / 1000), ARGV[1])
if tonumber(ARGV[2]) > ${EPSILON} then redis.call('HSET', KEYS[2], 'h:' .. ARGV[1], ARGV[2]) else redis.call('HDEL', KEYS[2], 'h:' .. ARGV[1]) end
if ARGV[3] == '1' then redis.call('HDEL', KEYS[2], 'spent') end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
return 0
`;

/** Heartbeat: this instance is alive; instances gone longer than `forget` (ms) leave the set.
 *  KEYS: instances. ARGV: instance, forget (ms). */
const HEARTBEAT = `
local t = redis.call('TIME')
local clock = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[1], clock, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', clock - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 0
`;

/**
 * Breakers: a hash per channel (phase, failures, retryAt, cooldown, v). Each change is published as
 * JSON {c, v, phase, failures, retryAt}; `v` (Redis's clock in µs, as a string) orders the views an
 * instance hears. Scripts below start with this prelude. KEYS: breaker hash, probe key.
 * ARGV (all breaker scripts): channel name, updates topic, ttl (ms), then the script's own.
 */
const BREAKER_PRELUDE = `
local function clock()
  local t = redis.call('TIME')
  return t[1] .. string.format('%06d', t[2])
end
local function encode(phase, failures, retryAt, v)
  return cjson.encode({c = ARGV[1], v = v, phase = phase, failures = failures, retryAt = retryAt})
end
local function save(phase, failures, retryAt, cooldown)
  local v = clock()
  redis.call('HSET', KEYS[1], 'phase', phase, 'failures', failures, 'retryAt', retryAt, 'cooldown', cooldown, 'v', v)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  local view = encode(phase, failures, retryAt, v)
  redis.call('PUBLISH', ARGV[2], view)
  return view
end
local stored = redis.call('HMGET', KEYS[1], 'phase', 'failures', 'retryAt', 'cooldown', 'v')
local phase, failures, retryAt = stored[1] or 'closed', tonumber(stored[2] or '0'), tonumber(stored[3] or '0')
local function current()
  -- no hash (never opened, or expired): closed, as of now
  return encode(phase, failures, retryAt, stored[5] or clock())
end
`;

/** ARGV[4..]: ok 0|1, now, retryAfterMs, failures to open, cooldown, max cooldown (the cap of both
 *  the doubling and an upstream's Retry-After). Returns the new view, or false when nothing changed. */
const BREAKER_RESULT = `${BREAKER_PRELUDE}
local now, base = tonumber(ARGV[5]), tonumber(ARGV[8])
local cooldown = tonumber(stored[4] or ARGV[8])
if ARGV[4] == '1' then
  if phase == 'closed' and failures == 0 then return false end
  redis.call('DEL', KEYS[2])
  return save('closed', 0, 0, base)
end
failures = failures + 1
if phase == 'half_open' then
  cooldown = math.min(cooldown * 2, tonumber(ARGV[9]))
elseif failures < tonumber(ARGV[7]) then
  return save(phase, failures, retryAt, cooldown)
end
return save('open', failures, now + math.min(math.max(cooldown, tonumber(ARGV[6])), tonumber(ARGV[9])), cooldown)
`;

/** ARGV[4..]: instance, now, cooldown (the config's, when the hash has none).
 *  Returns {1, view} when this instance won the probe, else {0, current view}. */
const BREAKER_CLAIM = `${BREAKER_PRELUDE}
local now = tonumber(ARGV[5])
if phase == 'closed' or now < retryAt then return {0, current()} end
local cooldown = tonumber(stored[4] or ARGV[6])
if not redis.call('SET', KEYS[2], ARGV[4], 'NX', 'PX', math.max(cooldown, 1)) then return {0, current()} end
return {1, save('half_open', failures, now + cooldown, cooldown)}
`;

/** Returns the current view. */
const BREAKER_READ = `${BREAKER_PRELUDE}
return current()
`;

type Arg = string | number;
type Script = (keys: string[], args: Arg[]) => Promise<unknown>;

export interface Scripts {
  admit: Script;
  settle: Script;
  repair: Script;
  heartbeat: Script;
  breakerResult: Script;
  breakerClaim: Script;
  breakerRead: Script;
}

const SOURCES: Record<keyof Scripts, string> = {
  admit: ADMIT,
  settle: SETTLE,
  repair: REPAIR,
  heartbeat: HEARTBEAT,
  breakerResult: BREAKER_RESULT,
  breakerClaim: BREAKER_CLAIM,
  breakerRead: BREAKER_READ,
};

/** Registers every script on the client; each call passes its keys and arguments. */
export function defineScripts(redis: Redis): Scripts {
  const commands = redis as unknown as Record<string, (...args: Arg[]) => Promise<unknown>>;
  const scripts = {} as Scripts;
  for (const [name, lua] of Object.entries(SOURCES) as Array<[keyof Scripts, string]>) {
    const command = `sluice_${name}`;
    redis.defineCommand(command, { lua });
    scripts[name] = (keys, args) => commands[command]!(keys.length, ...keys, ...args);
  }
  return scripts;
}
