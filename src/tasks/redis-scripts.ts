/**
 * The Lua scripts of the Redis task store. Each state change is one script, so it is atomic on the server:
 * it first checks that the task exists and has not expired, then its current status against the
 * transition table it is given (state.ts ALLOWED_TRANSITIONS, passed as data), then the limits, and only
 * then writes. A refusal writes nothing.
 *
 * Layout under the key prefix P (every replica sharing tasks uses the same P):
 *
 *   P task:<id>          hash    one task (fields: RECORD_FIELDS, plus `outcome`); PEXPIRE set when terminal
 *   P owner:<owner>      zset    id → list position: the owner's tasks in creation order
 *   P owner-meta:<owner> hash    `live` (count of the owner's live tasks), `expires` (latest expiry of its
 *                                tasks); both owner keys expire with the owner's last task once none is live
 *   P live               zset    id → position: every task that is not terminal (never expires)
 *   P lru                zset    id → use tick: every terminal task, least recently used first
 *   P expiry             zset    id → expiresAt: every terminal task, for the sweep
 *   P terminal           hash    id → JSON [owner, size]: lets a terminal task be cleaned up after Redis
 *                                has already expired its hash
 *   P bytes              string  sum of the sizes of the terminal tasks (size = max(1, outcomeBytes))
 *   P seq                string  counter for list positions and use ticks
 *   P evictions          string  how many terminal tasks were evicted to make room
 *   P executors          zset    executor id → when its lease lapses (epoch ms): one entry per replica
 *                                that runs tasks, renewed while it lives
 *   P executing:<exec>   set     ids of the live tasks that executor runs (a task's hash names its
 *                                `executor`); when the lease lapses they become failed
 *   P caller-live:<who>  set     ids of the live tasks of a caller created with a live limit (a task's
 *                                hash names its `caller`); pruned of ids no longer live on each create
 *   P clock              hash    `seen`: when a renew or lapse last ran; `since`: when Redis's current
 *                                unbroken stretch of serving began (see awake_since)
 *   P events             channel `<id> <status> <replica>` when a task becomes terminal (the replica that
 *                                made it so), `<id> gone` when it is evicted or expired
 *
 * Scripts build the keys of other tasks and owners from P (an eviction cannot know them in advance), so
 * the store needs a single Redis node (standalone, Sentinel, or a managed single-shard Redis), not Cluster.
 *
 * Every script returns an array whose first element is a code: 'ok', or a refusal ('not_found',
 * 'stale', 'illegal', 'too_large', 'full', 'caller_full', 'exists'). redis-codec.ts maps the refusals
 * to typed errors in one place.
 */
import { LUA_EXPIRES_AT } from './expiry.js';
import { ALLOWED_TRANSITIONS } from './state.js';

/** The transition table (state.ts), as the data the scripts that change a status are given. */
export const TRANSITIONS_JSON = JSON.stringify(ALLOWED_TRANSITIONS);

/** The task fields every script returns, in this order (then `outcome` when asked for). */
export const RECORD_FIELDS = [
  'id',
  'status',
  'message',
  'created',
  'updated',
  'ttl',
  'poll',
  'owner',
  'identity',
  'session',
  'tool',
  'bytes',
  'pos',
  'expires',
  'trace',
  'server',
] as const;

/** The keys every script gets first, in this order (names relative to the prefix). */
export const SHARED_KEYS = [
  'live',
  'lru',
  'expiry',
  'terminal',
  'bytes',
  'seq',
  'evictions',
  'executors',
] as const;

/** How many expired terminal tasks one create or update sweeps out at most. */
export const SWEEP_BATCH = 100;

/** How many executors whose lease lapsed one lease sweep handles at most. */
export const LAPSE_BATCH = 10;

const PRELUDE = `
-- Shared by every script.
-- KEYS[1] P live  KEYS[2] P lru  KEYS[3] P expiry  KEYS[4] P terminal  KEYS[5] P bytes  KEYS[6] P seq
-- KEYS[7] P evictions  KEYS[8] P executors
-- ARGV[1] the prefix P; ARGV[2] now in epoch ms, or '' to use Redis's own clock (TIME)
local PREFIX = ARGV[1]
local NOW = tonumber(ARGV[2])
if not NOW then
  local time = redis.call('TIME')
  NOW = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local LIVE, LRU, EXPIRY, TERMINAL, BYTES, SEQ, EVICTIONS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local EXECUTORS = KEYS[8]
local FIELDS = {${RECORD_FIELDS.map((field) => `'${field}'`).join(', ')}}

local function int(n) return string.format('%.0f', n) end
local function task_key(id) return PREFIX .. 'task:' .. id end
local function owner_key(owner) return PREFIX .. 'owner:' .. owner end
local function owner_meta_key(owner) return PREFIX .. 'owner-meta:' .. owner end
local function executing_key(executor) return PREFIX .. 'executing:' .. executor end
local function caller_key(caller) return PREFIX .. 'caller-live:' .. caller end
local function expired(expires) return expires and NOW >= tonumber(expires) end
${LUA_EXPIRES_AT}
-- The task as FIELDS values (false where absent), then its outcome when asked for.
local function record(id, with_outcome)
  local values = redis.call('HMGET', task_key(id), unpack(FIELDS))
  if with_outcome then values[#values + 1] = redis.call('HGET', task_key(id), 'outcome') end
  return values
end

-- Removes a terminal task and every index entry of it, and tells the waiters it is gone.
local function forget(id)
  local entry = redis.call('HGET', TERMINAL, id)
  if entry then
    local owner_size = cjson.decode(entry)
    local owner = owner_size[1]
    redis.call('DECRBY', BYTES, int(owner_size[2]))
    redis.call('HDEL', TERMINAL, id)
    redis.call('ZREM', owner_key(owner), id)
    if redis.call('EXISTS', owner_key(owner)) == 0 then redis.call('DEL', owner_meta_key(owner)) end
  end
  redis.call('ZREM', LRU, id)
  redis.call('ZREM', EXPIRY, id)
  redis.call('DEL', task_key(id))
  redis.call('PUBLISH', PREFIX .. 'events', id .. ' gone')
end

-- Forgets terminal tasks whose time is up (Redis may have expired their hashes already).
local function sweep()
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', EXPIRY, '-inf', int(NOW), 'LIMIT', 0, ${SWEEP_BATCH})) do
    forget(id)
  end
end

-- Evicts the least recently used terminal task; false when there is none.
local function evict_one()
  local oldest = redis.call('ZRANGE', LRU, 0, 0)[1]
  if not oldest then return false end
  forget(oldest)
  redis.call('INCR', EVICTIONS)
  return true
end

-- When Redis's current unbroken stretch of serving began. Every replica renews or sweeps at least every
-- second, so a gap of more than "gap" ms since the last renew or lapse means that Redis itself was away
-- (stalled, restarted) or that every replica was: nobody could renew meanwhile, so a new stretch begins.
local function awake_since(gap)
  local h = redis.call('HMGET', PREFIX .. 'clock', 'seen', 'since')
  local seen, since = tonumber(h[1]), tonumber(h[2])
  if not seen or not since or NOW - seen > gap then since = NOW end
  redis.call('HSET', PREFIX .. 'clock', 'seen', int(math.max(NOW, seen or 0)), 'since', int(since))
  return since
end

-- Whether the transition table (state.ts ALLOWED_TRANSITIONS, as data) allows from → to.
local function legal(allowed, from, to)
  for _, next_status in ipairs(allowed[from] or {}) do
    if next_status == to then return true end
  end
  return false
end

-- The bookkeeping of a task that has just become terminal (its hash already says so): it leaves the
-- live set, its executor's set and its caller's set, joins the LRU within the byte budget (evicting the
-- least recently used terminal tasks to make room), gets its expiry (PEXPIRE on the hash, and on the owner
-- keys once the owner has no live task left), and '<id> <status> <origin>' is published on P events.
-- t: {id, key, status, created, updated, ttl, owner, executor (or false), caller (or false), bytes};
-- origin: the replica that made the change.
local function settle(t, max_bytes, origin)
  local expires = expires_at(t.created, t.updated, t.ttl)
  sweep()
  redis.call('ZREM', LIVE, t.id)
  if t.executor then redis.call('SREM', executing_key(t.executor), t.id) end
  if t.caller then redis.call('SREM', caller_key(t.caller), t.id) end
  local size = math.max(1, t.bytes)
  while tonumber(redis.call('GET', BYTES) or '0') + size > max_bytes do
    if not evict_one() then break end
  end
  redis.call('INCRBY', BYTES, int(size))
  redis.call('HSET', TERMINAL, t.id, cjson.encode({t.owner, size}))
  redis.call('ZADD', LRU, redis.call('INCR', SEQ), t.id)
  redis.call('ZADD', EXPIRY, int(expires), t.id)
  redis.call('HSET', t.key, 'expires', int(expires))
  redis.call('PEXPIRE', t.key, int(math.max(1, expires - NOW)))
  local meta = owner_meta_key(t.owner)
  local live = redis.call('HINCRBY', meta, 'live', -1)
  local keep_until = math.max(expires, tonumber(redis.call('HGET', meta, 'expires') or '0'))
  redis.call('HSET', meta, 'expires', int(keep_until))
  if live <= 0 then
    local remaining = int(math.max(1, keep_until - NOW))
    redis.call('PEXPIRE', owner_key(t.owner), remaining)
    redis.call('PEXPIRE', meta, remaining)
  end
  redis.call('PUBLISH', PREFIX .. 'events', t.id .. ' ' .. t.status .. ' ' .. origin)
end
`;

const script = (header: string, body: string): string => `${header.trim()}\n${PRELUDE}\n${body.trim()}\n`;

/** What each script expects after the shared KEYS and ARGV. */
export const SCRIPTS = {
  create: script(
    `
-- create: adds a task, working, with no expiry (a live task never expires).
-- KEYS[9] P task:<id>  KEYS[10] P owner:<owner>  KEYS[11] P owner-meta:<owner>
-- ARGV[3] maxTasks (live + terminal)
-- ARGV[4] JSON {id, owner, identity?, session, tool, ttl, poll, trace?, server?, executor?, lease?, limit?: {caller, max}}
-- Returns {'ok', record} | {'caller_full', live} when the caller has "max" live tasks | {'full'} when
-- every slot is live | {'exists'} when the id is taken.
-- With a limit, the caller's set is first pruned of tasks no longer live (ended, or lost with a Redis that
-- forgot them), so the count is what Redis holds. Makes room by sweeping expired tasks, then evicting
-- terminal tasks least recently used first. With an executor, the task joins P executing:<executor> and
-- the executor's lease is (re)newed for "lease" ms; with a limit, it joins P caller-live:<caller>.
`,
    `
local task = cjson.decode(ARGV[4])
local max_tasks = tonumber(ARGV[3])
if redis.call('EXISTS', KEYS[9]) == 1 then return {'exists'} end
local limit = task.limit
if limit then
  local counted = caller_key(limit.caller)
  for _, id in ipairs(redis.call('SMEMBERS', counted)) do
    if not redis.call('ZSCORE', LIVE, id) then redis.call('SREM', counted, id) end
  end
  local live = redis.call('SCARD', counted)
  if live >= tonumber(limit.max) then return {'caller_full', live} end
end
sweep()
while redis.call('ZCARD', LIVE) + redis.call('ZCARD', LRU) >= max_tasks do
  if not evict_one() then return {'full'} end
end
local pos = redis.call('INCR', SEQ)
local fields = {'id', task.id, 'status', 'working', 'created', int(NOW), 'updated', int(NOW),
  'ttl', int(task.ttl), 'poll', int(task.poll), 'owner', task.owner, 'session', task.session,
  'tool', task.tool, 'bytes', '0', 'pos', pos}
if task.identity then
  fields[#fields + 1] = 'identity'
  fields[#fields + 1] = task.identity
end
if task.trace then
  fields[#fields + 1] = 'trace'
  fields[#fields + 1] = task.trace
end
if task.server then
  fields[#fields + 1] = 'server'
  fields[#fields + 1] = task.server
end
if task.executor then
  fields[#fields + 1] = 'executor'
  fields[#fields + 1] = task.executor
  redis.call('SADD', executing_key(task.executor), task.id)
  redis.call('ZADD', EXECUTORS, int(NOW + task.lease), task.executor)
end
if limit then
  fields[#fields + 1] = 'caller'
  fields[#fields + 1] = limit.caller
  redis.call('SADD', caller_key(limit.caller), task.id)
end
redis.call('HSET', KEYS[9], unpack(fields))
redis.call('ZADD', LIVE, pos, task.id)
redis.call('ZADD', KEYS[10], pos, task.id)
redis.call('HINCRBY', KEYS[11], 'live', 1)
redis.call('PERSIST', KEYS[10])
redis.call('PERSIST', KEYS[11])
return {'ok', record(task.id, false)}
`,
  ),

  get: script(
    `
-- get: reads a task.
-- KEYS[9] P task:<id>
-- ARGV[3] the id; ARGV[4] '1' to count the read as a use of a terminal task (LRU), '0' not to
-- Returns {'ok', record with outcome} | {'not_found'} (unknown, expired: an expired task is forgotten).
`,
    `
local id = ARGV[3]
local head = redis.call('HMGET', KEYS[9], 'id', 'expires')
if not head[1] then
  if redis.call('HEXISTS', TERMINAL, id) == 1 then forget(id) end
  return {'not_found'}
end
if expired(head[2]) then
  forget(id)
  return {'not_found'}
end
if head[2] and ARGV[4] == '1' then redis.call('ZADD', LRU, 'XX', redis.call('INCR', SEQ), id) end
return {'ok', record(id, true)}
`,
  ),

  update: script(
    `
-- update: the one guarded status change.
-- KEYS[9] P task:<id>
-- ARGV[3] JSON of the transition table {status: [allowed next statuses]}; terminal = no next status
-- ARGV[4] maxResultBytes
-- ARGV[5] JSON {from?, status, message?, hasOutcome, outcomeBytes?, by}; ARGV[6] the outcome JSON (if hasOutcome), in
--   parts from ARGV[6] on when it came in pieces
-- Returns {'ok', record (with the stored outcome only when the change has none)}
--       | {'not_found'} | {'stale', status} when "from" is given and the task is not in it
--       | {'illegal', from} | {'too_large', bytes}: a refusal changes nothing.
-- On a terminal status: settle() (see the prelude); the message names "by", the replica that made it.
`,
    `
local h = redis.call('HMGET', KEYS[9], 'id', 'status', 'created', 'updated', 'ttl', 'owner', 'bytes', 'expires', 'executor', 'caller')
local id, from = h[1], h[2]
if not id then return {'not_found'} end
if expired(h[8]) then
  forget(id)
  return {'not_found'}
end
local allowed = cjson.decode(ARGV[3])
local change = cjson.decode(ARGV[5])
local to = change.status
if change.from and change.from ~= from then return {'stale', from} end
if not legal(allowed, from, to) then return {'illegal', from} end
local bytes = tonumber(h[7])
if change.hasOutcome then bytes = tonumber(change.outcomeBytes or 0) end
local max_bytes = tonumber(ARGV[4])
if bytes > max_bytes then return {'too_large', int(bytes)} end

local updated = math.max(NOW, tonumber(h[4]))
redis.call('HSET', KEYS[9], 'status', to, 'updated', int(updated))
if change.message ~= nil then
  redis.call('HSET', KEYS[9], 'message', change.message)
else
  redis.call('HDEL', KEYS[9], 'message')
end
if change.hasOutcome then redis.call('HSET', KEYS[9], 'outcome', table.concat(ARGV, '', 6), 'bytes', int(bytes)) end

local next_allowed = allowed[to]
if next_allowed and #next_allowed == 0 then
  settle({id = id, key = KEYS[9], status = to, created = tonumber(h[3]), updated = updated,
    ttl = tonumber(h[5]), owner = h[6], executor = h[9], caller = h[10], bytes = bytes}, max_bytes, change.by)
end
return {'ok', record(id, not change.hasOutcome)}
`,
  ),

  renew: script(
    `
-- renew: keeps an executor's lease: it lapses "lease" ms from now unless renewed again.
-- ARGV[3] the executor id; ARGV[4] the lease in ms; ARGV[5] the gap that starts a new stretch (awake_since)
-- Returns {'ok'}.
`,
    `
awake_since(tonumber(ARGV[5]))
redis.call('ZADD', EXECUTORS, int(NOW + tonumber(ARGV[4])), ARGV[3])
return {'ok'}
`,
  ),

  lapse: script(
    `
-- lapse: fails the live tasks of executors that are gone: every executor whose lease has lapsed (at most
-- ${LAPSE_BATCH} per call), or the one named (an executor that stops releases its own tasks).
-- ARGV[3] JSON of the transition table; ARGV[4] maxResultBytes
-- ARGV[5] JSON {message, outcome (JSON text), outcomeBytes, by}: what a lost task fails with, and the
--         replica doing it; ARGV[6] the executor to release, or '' for every lapsed one
-- ARGV[7] the lease in ms; ARGV[8] the gap that starts a new stretch (awake_since)
-- Returns {'ok', number of tasks failed}. Each failed task is settled (see the prelude), so every waiter
-- on every replica wakes; the executor's set and lease entry are removed. Lapsed leases are judged only
-- once Redis has served a whole lease without a gap: a lease that ran out while Redis itself was away
-- (or every replica was) says nothing about its executor, which gets that lease to renew.
`,
    `
local allowed = cjson.decode(ARGV[3])
local max_bytes = tonumber(ARGV[4])
local lost = cjson.decode(ARGV[5])
local executors = {ARGV[6]}
local since = awake_since(tonumber(ARGV[8]))
if ARGV[6] == '' then
  if NOW - since < tonumber(ARGV[7]) then return {'ok', 0} end
  executors = redis.call('ZRANGEBYSCORE', EXECUTORS, '-inf', int(NOW), 'LIMIT', 0, ${LAPSE_BATCH})
end
local failed = 0
for _, executor in ipairs(executors) do
  for _, id in ipairs(redis.call('SMEMBERS', executing_key(executor))) do
    local key = task_key(id)
    local h = redis.call('HMGET', key, 'id', 'status', 'created', 'updated', 'ttl', 'owner', 'executor', 'caller')
    if h[1] and redis.call('ZSCORE', LIVE, id) and h[7] == executor and legal(allowed, h[2], 'failed') then
      local updated = math.max(NOW, tonumber(h[4]))
      local bytes = 0
      redis.call('HSET', key, 'status', 'failed', 'updated', int(updated), 'message', lost.message)
      if lost.outcomeBytes <= max_bytes then
        bytes = lost.outcomeBytes
        redis.call('HSET', key, 'outcome', lost.outcome, 'bytes', int(bytes))
      end
      settle({id = id, key = key, status = 'failed', created = tonumber(h[3]), updated = updated,
        ttl = tonumber(h[5]), owner = h[6], executor = executor, caller = h[8], bytes = bytes}, max_bytes,
        lost.by)
      failed = failed + 1
    end
  end
  redis.call('DEL', executing_key(executor))
  redis.call('ZREM', EXECUTORS, executor)
end
return {'ok', failed}
`,
  ),

  list: script(
    `
-- list: one page of an owner's tasks in creation order.
-- KEYS[9] P owner:<owner>
-- ARGV[3] the position to start after (0 for the first page); ARGV[4] the page size
-- Returns {'ok', more (1 when tasks remain after this page), {record with outcome, ...}}.
-- Index entries of tasks that are gone or expired are cleaned up on the way.
`,
    `
local limit = tonumber(ARGV[4])
local after = '(' .. ARGV[3]
local found = {}
local more = 0
while more == 0 do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[9], after, '+inf', 'WITHSCORES', 'LIMIT', 0, limit + 1 - #found)
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    local id = batch[i]
    after = '(' .. batch[i + 1]
    local head = redis.call('HMGET', task_key(id), 'id', 'expires')
    if not head[1] then
      forget(id)
      redis.call('ZREM', KEYS[9], id)
    elseif expired(head[2]) then
      forget(id)
    elseif #found == limit then
      more = 1
      break
    else
      found[#found + 1] = record(id, true)
    end
  end
end
return {'ok', more, found}
`,
  ),
} as const;

export type ScriptName = keyof typeof SCRIPTS;
