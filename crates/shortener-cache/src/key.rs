//! A cached link's key in one allocation: [`CachedKey`].

use std::hash::{Hash, Hasher};

use quick_cache::Equivalent;
use shortener_core::LinkKey;

/// A [`LinkKey`] as `domain/code` in one boxed string: neither a domain (a host name
/// and port, or the empty default) nor a code holds a `/`, so the first one splits
/// them. It hashes as the [`LinkKey`] it stands for, so a lookup needs no new key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CachedKey(Box<str>);

impl CachedKey {
    pub(crate) fn new(key: &LinkKey) -> Self {
        let (domain, code) = (key.domain.as_str(), key.code.as_str());
        let mut text = String::with_capacity(domain.len() + 1 + code.len());
        text.push_str(domain);
        text.push('/');
        text.push_str(code);
        Self(text.into_boxed_str())
    }

    fn parts(&self) -> (&str, &str) {
        self.0.split_once('/').unwrap_or((&self.0, ""))
    }
}

/// As `LinkKey`'s derived `Hash`: its domain's text, then its code's.
impl Hash for CachedKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (domain, code) = self.parts();
        domain.hash(state);
        code.hash(state);
    }
}

impl Equivalent<CachedKey> for LinkKey {
    fn equivalent(&self, key: &CachedKey) -> bool {
        key.parts() == (self.domain.as_str(), self.code.as_str())
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use shortener_core::{Domain, ShortCode};

    use super::*;

    #[test]
    fn a_key_hashes_and_compares_as_its_link_key() {
        let hasher = std::collections::hash_map::RandomState::new();
        let keys = [
            LinkKey::on_default(ShortCode::parse("abc").unwrap()),
            LinkKey::new(
                Domain::parse("go.example.com:8080").unwrap(),
                ShortCode::parse("abc").unwrap(),
            ),
            LinkKey::new(
                Domain::parse("a.b").unwrap(),
                ShortCode::parse("c-d").unwrap(),
            ),
        ];
        for key in &keys {
            let cached = CachedKey::new(key);
            assert_eq!(hasher.hash_one(key), hasher.hash_one(&cached), "{key:?}");
            for other in &keys {
                assert_eq!(other.equivalent(&cached), other == key);
            }
        }
    }
}
