//! The Redis key of one bucket: one quota (a policy) of one client (an identity).

/// `{prefix}{{identity}}:{policy}`. The identity is the hash tag, so all of one client's
/// keys share a cluster slot; braces and `%` in it are percent-encoded, so that the tag is
/// the whole identity and no two (identity, policy) pairs share a key.
pub(crate) fn bucket_key(prefix: &str, identity: &str, policy: &str) -> String {
    let mut key = String::with_capacity(prefix.len() + identity.len() + policy.len() + 3);
    key.push_str(prefix);
    key.push('{');
    if identity
        .bytes()
        .any(|byte| matches!(byte, b'%' | b'{' | b'}'))
    {
        for character in identity.chars() {
            match character {
                '%' => key.push_str("%25"),
                '{' => key.push_str("%7B"),
                '}' => key.push_str("%7D"),
                other => key.push(other),
            }
        }
    } else {
        // The usual identity (an address, a network, `key:` and a name) needs no escape:
        // copied whole, far cheaper than a character at a time on every decision.
        // See `cargo xtask bench --only http` (the Redis `redirect` policy rows).
        key.push_str(identity);
    }
    key.push_str("}:");
    key.push_str(policy);
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tag_the_whole_identity_and_never_alias() {
        assert_eq!(
            bucket_key("rl:", "203.0.113.9", "create"),
            "rl:{203.0.113.9}:create"
        );
        assert_eq!(
            bucket_key("rl:", "2001:db8::1", "create"),
            "rl:{2001:db8::1}:create"
        );
        // Without escaping, both would be rl:{a}:b}:c.
        assert_eq!(bucket_key("rl:", "a}:b", "c"), "rl:{a%7D:b}:c");
        assert_eq!(bucket_key("rl:", "a", "b}:c"), "rl:{a}:b}:c");
        assert_eq!(bucket_key("rl:", "{%}", "c"), "rl:{%7B%25%7D}:c");
    }
}
