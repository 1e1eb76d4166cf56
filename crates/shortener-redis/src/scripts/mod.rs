//! The Lua scripts (`lua/*.lua`), their calls and their replies.

use std::sync::LazyLock;

use redis::{Arg, Cmd, ToRedisArgs};
use shortener_core::{Algorithm, Decision, LimiterError, Policy};

static TOKEN_BUCKET: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(include_str!("../../../../lua/token_bucket.lua")));
static GCRA: LazyLock<Lua> = LazyLock::new(|| Lua::new(include_str!("../../../../lua/gcra.lua")));

/// Checks at connect time that the server is Redis 7 or newer (`REDIS_VERSION` exists in
/// scripts since 7.0) and that a script may call `TIME`. Returns `{version, seconds, micros}`.
pub(crate) static PROBE: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(
        "local time = redis.call('TIME')\n\
         return {redis.REDIS_VERSION or 'older than 7.0', time[1], time[2]}",
    )
});

/// The node heartbeat (`lua/heartbeat.lua`): records a node as alive now, on Redis's
/// clock, and returns how many nodes were alive within the window.
pub(crate) static HEARTBEAT: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(include_str!("../../../../lua/heartbeat.lua")));

/// The heartbeat call for `node` on `key`, counting nodes seen within `window_ms`.
pub(crate) fn heartbeat_call(key: String, node: &str, window_ms: u64) -> ScriptCall {
    let mut call = ScriptCall::new(&HEARTBEAT, &[key], 32);
    call.command.arg(node).arg(window_ms);
    call
}

/// What the audit mode adds to a decision: the time the script used, and the number of
/// writes to the key so far (after this decision, if it wrote). An admitted request has
/// a fresh version; a refused one the version of the state it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AuditRecord {
    /// Redis's clock (or the explicit time), integer microseconds since the Unix epoch.
    pub now_us: u64,
    pub version: u64,
}

/// A script's source and SHA-1.
pub(crate) struct Lua {
    source: &'static str,
    hash: String,
}

/// One run of a script with its keys and arguments: `EVALSHA hash numkeys key... arg...`,
/// written once, numbers and all, straight into the command's buffer. A list of strings
/// copied into the command after cost every decision a second copy.
/// See `cargo xtask bench --only client` in docs/BENCHMARKS.md.
pub(crate) struct ScriptCall {
    lua: &'static Lua,
    command: Cmd,
}

impl Lua {
    pub(crate) fn new(source: &'static str) -> Self {
        let hash = redis::Script::new(source).get_hash().to_owned();
        Self { source, hash }
    }

    pub(crate) fn hash(&self) -> &str {
        &self.hash
    }

    /// `SCRIPT LOAD` (sent to every node of a cluster).
    pub(crate) fn load_command(&self) -> Cmd {
        let mut command = redis::cmd("SCRIPT");
        command.arg("LOAD").arg(self.source);
        command
    }

    /// A call without keys or arguments.
    pub(crate) fn call(&'static self) -> ScriptCall {
        ScriptCall::new(self, &[] as &[&str], 0)
    }
}

impl ScriptCall {
    /// The call of `lua` on `keys`, with room for `args_len` bytes of arguments, which
    /// the caller adds to [`ScriptCall::command`] (sized up front: grown argument by
    /// argument, the buffers were reallocated about ten times per call).
    pub(crate) fn new(lua: &'static Lua, keys: &[impl AsRef<str>], args_len: usize) -> Self {
        let keys_len = keys.iter().map(|key| key.as_ref().len()).sum::<usize>();
        let mut command = Cmd::with_capacity(3 + keys.len() + 8, 64 + keys_len + args_len);
        command.arg("EVALSHA").arg(&lua.hash).arg(keys.len());
        for key in keys {
            command.arg(key.as_ref());
        }
        Self { lua, command }
    }

    /// Adds an argument.
    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.command.arg(arg);
        self
    }

    /// Adds the explicit time of a test, or `""`, which lets the script read Redis's clock.
    pub(crate) fn time_arg(&mut self, now_us: Option<u64>) -> &mut Self {
        match now_us {
            Some(now) => self.arg(now),
            None => self.arg(""),
        }
    }

    /// Adds the arguments every single-bucket call starts with: the policy's capacity and
    /// refill interval, the cost, and the time.
    fn bucket_args(&mut self, policy: &Policy, cost: u64, now_us: Option<u64>) -> &mut Self {
        self.arg(policy.capacity())
            .arg(policy.interval_us())
            .arg(cost);
        self.time_arg(now_us)
    }

    /// `EVALSHA`: the script by its hash, the usual way.
    pub(crate) fn evalsha(&self) -> &Cmd {
        &self.command
    }

    /// `EVAL` with the whole source, after a NOSCRIPT: it runs the script and caches it
    /// in one step, so unlike `SCRIPT LOAD` + `EVALSHA` it cannot lose a race with another
    /// `SCRIPT FLUSH`.
    pub(crate) fn eval(&self) -> Cmd {
        let mut command = redis::cmd("EVAL");
        command.arg(self.lua.source);
        for arg in self.command.args_iter().skip(2) {
            if let Arg::Simple(bytes) = arg {
                command.arg(bytes);
            }
        }
        command
    }

    /// The keys and the arguments, as text (for tests).
    #[cfg(test)]
    fn keys_and_args(&self) -> (Vec<String>, Vec<String>) {
        let mut words = (self.command.args_iter().skip(2)).map(|arg| match arg {
            Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            _ => "<not a plain argument>".to_owned(),
        });
        let count: usize = words.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let words: Vec<String> = words.collect();
        (words[..count].to_vec(), words[count..].to_vec())
    }
}

/// The single-bucket script of an algorithm; a fixed window has none (it is decided only
/// as a demand of `all_or_nothing.lua`).
pub(crate) fn script(algorithm: Algorithm) -> Option<&'static Lua> {
    match algorithm {
        Algorithm::TokenBucket => Some(&TOKEN_BUCKET),
        Algorithm::Gcra => Some(&GCRA),
        Algorithm::FixedWindow => None,
    }
}

/// The call for one decision on `key`; `now_us: None` lets the script read Redis's clock.
pub(crate) fn decision_call(
    lua: &'static Lua,
    key: &str,
    policy: &Policy,
    cost: u64,
    debt: u64,
    now_us: Option<u64>,
    audit: bool,
) -> ScriptCall {
    let mut call = if audit {
        let audit = format!("{key}:audit");
        ScriptCall::new(lua, &[key, &audit], 80)
    } else {
        ScriptCall::new(lua, &[key], 80)
    };
    call.bucket_args(policy, cost, now_us);
    call.arg(if audit { "1" } else { "0" });
    if debt > 0 {
        call.arg(debt);
    }
    call
}

/// The call for `count` decisions of `cost` each on `key`, decided one after another at
/// one instant (Redis's clock, or `now_us` in tests); no debt, no audit.
pub(crate) fn batch_call(
    lua: &'static Lua,
    key: &str,
    policy: &Policy,
    cost: u64,
    count: usize,
    now_us: Option<u64>,
) -> ScriptCall {
    let mut call = ScriptCall::new(lua, &[key], 80);
    call.bucket_args(policy, cost, now_us);
    call.arg("0").arg("0").arg(count);
    call
}

/// The reply of a batch call, `{credit before, admitted}`, as the `count` decisions in
/// order: the first `admitted` admitted, each leaving one cost's refill less credit, the
/// rest refused with the credit the admitted left.
pub(crate) fn decode_batch(
    reply: &redis::Value,
    policy: &Policy,
    cost: u64,
    count: usize,
) -> Result<Vec<Decision>, LimiterError> {
    let (credit, admitted) = decode_taken(reply, policy, cost, count)?;
    let need = cost.saturating_mul(policy.interval_us());
    let mut left = credit;
    Ok((0..count)
        .map(|index| {
            if index < admitted {
                left -= need;
                Decision::from_credit(policy, cost, true, left)
            } else {
                Decision::from_credit(policy, cost, false, left)
            }
        })
        .collect())
}

/// The call that leases up to `tokens` from the bucket of `key` (of the shared policy):
/// a batch of `tokens` requests of cost 1, at Redis's time.
pub(crate) fn lease_call(lua: &'static Lua, key: &str, shared: &Policy, tokens: u64) -> ScriptCall {
    let count = usize::try_from(tokens).unwrap_or(usize::MAX);
    batch_call(lua, key, shared, 1, count, None)
}

/// The reply of a [`lease_call`] for `tokens`: how many were granted, and the bucket's
/// credit (microseconds of refill) before the call.
pub(crate) fn decode_lease(
    reply: &redis::Value,
    shared: &Policy,
    tokens: u64,
) -> Result<(u64, u64), LimiterError> {
    let count = usize::try_from(tokens).unwrap_or(usize::MAX);
    let (credit, granted) = decode_taken(reply, shared, 1, count)?;
    Ok((granted as u64, credit))
}

/// `{credit before, admitted}` of a batch of `count` requests of `cost`, checked.
fn decode_taken(
    reply: &redis::Value,
    policy: &Policy,
    cost: u64,
    count: usize,
) -> Result<(u64, usize), LimiterError> {
    let unexpected =
        || LimiterError::Unexpected(format!("limiter script returned {reply:?}").into());
    let redis::Value::Array(items) = reply else {
        return Err(unexpected());
    };
    let [redis::Value::Int(credit), redis::Value::Int(admitted)] = items.as_slice() else {
        return Err(unexpected());
    };
    let credit = u64::try_from(*credit).map_err(|_| unexpected())?;
    let admitted = usize::try_from(*admitted).map_err(|_| unexpected())?;
    let need = cost.saturating_mul(policy.interval_us());
    let taken = u64::try_from(admitted)
        .ok()
        .and_then(|admitted| admitted.checked_mul(need))
        .ok_or_else(unexpected)?;
    if credit > policy.burst_us() || admitted > count || taken > credit {
        return Err(unexpected());
    }
    Ok((credit, admitted))
}

/// The reply of a decision script: one integer, the credit after the decision (`>= 0`:
/// admitted; `-1 - credit`: refused), or in audit mode `{that integer, now_us, version}`.
pub(crate) fn decode(
    reply: &redis::Value,
    policy: &Policy,
    cost: u64,
) -> Result<(Decision, AuditRecord), LimiterError> {
    let unexpected =
        || LimiterError::Unexpected(format!("limiter script returned {reply:?}").into());
    let (code, audit) = match reply {
        redis::Value::Int(code) => (*code, AuditRecord::default()),
        redis::Value::Array(items) => match items.as_slice() {
            [
                redis::Value::Int(code),
                redis::Value::Int(now_us),
                redis::Value::Int(version),
            ] => {
                let unsigned = |value: i64| u64::try_from(value).map_err(|_| unexpected());
                (
                    *code,
                    AuditRecord {
                        now_us: unsigned(*now_us)?,
                        version: unsigned(*version)?,
                    },
                )
            }
            _ => return Err(unexpected()),
        },
        _ => return Err(unexpected()),
    };
    let (allowed, credit) = if code >= 0 {
        (true, code)
    } else {
        (false, -1 - code)
    };
    let credit = u64::try_from(credit).map_err(|_| unexpected())?;
    if credit > policy.burst_us() {
        return Err(unexpected());
    }
    Ok((Decision::from_credit(policy, cost, allowed, credit), audit))
}

#[cfg(test)]
mod tests;
