//! [`free_port`]: a loopback port for a server a test is about to start.

use std::io;
use std::net::TcpListener;
use std::time::Instant;

/// A loopback port that was free a moment ago, below the kernel's ephemeral range.
///
/// Not port 0's choice: the kernel picks that from the ephemeral range, which outgoing
/// connections draw their local ports from too, so a child started a moment later could
/// find it taken by a connection to PostgreSQL or Redis (`xtask up`'s third node once
/// failed to start with `EADDRINUSE` so). Ports below that range are only ever listeners'.
/// Falls back to port 0's choice when that range leaves no room below it.
///
/// # Errors
/// When no port can be bound.
pub fn free_port() -> io::Result<u16> {
    const LOWEST: u16 = 10_000;
    let below = ephemeral_start().unwrap_or(32_768);
    if below > LOWEST + 1_000 {
        let span = u64::from(below - LOWEST);
        let seed = std::hash::BuildHasher::hash_one(
            &std::collections::hash_map::RandomState::new(),
            (std::process::id(), Instant::now()),
        );
        for attempt in 0..64u64 {
            let offset = seed.wrapping_add(attempt.wrapping_mul(7_919)) % span;
            // Below `span`, itself below 2^16, so the cast cannot truncate.
            let port = LOWEST + offset as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The first port of the kernel's ephemeral range (Linux), if it can be read.
fn ephemeral_start() -> Option<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}
