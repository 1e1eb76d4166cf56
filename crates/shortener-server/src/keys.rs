//! `shortener keys new`: a fresh random API key, printed once, with the `[[api_keys]]`
//! block to paste into the configuration (which keeps only the key's SHA-256).

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// What `keys new` was asked for.
pub type NewKey = crate::cli::NewKeyArgs;

impl NewKey {
    /// A random key (192 bits from the OS) and the text to print.
    ///
    /// # Errors
    /// When the operating system has no randomness to give.
    pub fn generate(&self) -> Result<(String, String), getrandom::Error> {
        let mut secret = [0u8; 24];
        getrandom::fill(&mut secret)?;
        let key = format!("shk_{}", hex::encode(secret));
        Ok((key.clone(), self.render(&key)))
    }

    /// The printout for `key`: the key once, then the block for the configuration.
    pub fn render(&self, key: &str) -> String {
        let digest = hex::encode(Sha256::digest(key.as_bytes()));
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# The key, shown once: give it to the client, keep no copy."
        );
        let _ = writeln!(out, "# {key}");
        let _ = writeln!(out, "[[api_keys]]");
        let _ = writeln!(out, "name = \"{}\"", self.name);
        let _ = writeln!(out, "sha256 = \"{digest}\"");
        if let Some(tier) = &self.tier {
            let _ = writeln!(out, "tier = \"{}\"", tier.replace(['"', '\\'], ""));
        }
        let scopes: Vec<String> = self
            .scopes
            .iter()
            .map(|scope| format!("\"{}\"", scope.name()))
            .collect();
        let _ = writeln!(out, "scopes = [{}]", scopes.join(", "));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shortener_http::auth::Scope;

    #[test]
    fn printed_block_holds_the_digest_of_the_printed_key() {
        let request = NewKey {
            name: shortener_core::Owner::parse("acme").unwrap(),
            tier: Some("pro".into()),
            scopes: vec![Scope::Create, Scope::Read],
        };
        let (key, text) = request.generate().unwrap();
        assert!(key.starts_with("shk_") && key.len() == 52, "{key}");
        let digest = hex::encode(Sha256::digest(key.as_bytes()));
        assert!(text.contains(&format!("sha256 = \"{digest}\"")), "{text}");
        assert!(text.contains("scopes = [\"create\", \"read\"]"), "{text}");
        assert!(text.contains("tier = \"pro\""), "{text}");
        let (other, _) = request.generate().unwrap();
        assert_ne!(key, other);
    }
}
