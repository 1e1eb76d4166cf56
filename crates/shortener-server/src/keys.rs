//! `shortener keys new`: a fresh random API key, printed once, with the `[[api_keys]]`
//! block to paste into the configuration (which keeps only the key's SHA-256).

use std::fmt::Write as _;

use sha2::{Digest, Sha256};
use shortener_core::Owner;

use crate::state::Scope;

/// What `keys new` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKey {
    pub name: Owner,
    pub tier: Option<String>,
    pub scopes: Vec<Scope>,
}

impl NewKey {
    /// Reads `--name NAME [--tier TIER] [--scopes create,read,...]`.
    ///
    /// # Errors
    /// A one-line message naming the bad or missing argument.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut name = None;
        let mut tier = None;
        let mut scopes = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--name" => {
                    let raw = value()?;
                    name = Some(Owner::parse(&raw).map_err(|e| format!("--name: {e}"))?);
                }
                "--tier" => tier = Some(value()?),
                "--scopes" => {
                    let raw = value()?;
                    let parsed = raw
                        .split(',')
                        .map(|scope| {
                            Scope::parse(scope.trim()).ok_or_else(|| {
                                format!(
                                    "--scopes: unknown scope `{scope}`; expected create, read, update, delete or admin"
                                )
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    scopes = Some(parsed);
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        Ok(Self {
            name: name.ok_or("--name is required")?,
            tier,
            scopes: scopes
                .unwrap_or_else(|| vec![Scope::Create, Scope::Read, Scope::Update, Scope::Delete]),
        })
    }

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

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn printed_block_holds_the_digest_of_the_printed_key() {
        let request =
            NewKey::from_args(args("--name acme --tier pro --scopes create,read")).unwrap();
        let (key, text) = request.generate().unwrap();
        assert!(key.starts_with("shk_") && key.len() == 52, "{key}");
        let digest = hex::encode(Sha256::digest(key.as_bytes()));
        assert!(text.contains(&format!("sha256 = \"{digest}\"")), "{text}");
        assert!(text.contains("scopes = [\"create\", \"read\"]"), "{text}");
        assert!(text.contains("tier = \"pro\""), "{text}");
        let (other, _) = request.generate().unwrap();
        assert_ne!(key, other);
    }

    #[test]
    fn bad_arguments_are_named() {
        let error = NewKey::from_args(args("--name acme --scopes create,write")).unwrap_err();
        assert!(
            error.contains("--scopes") && error.contains("write"),
            "{error}"
        );
        assert!(
            NewKey::from_args(args("--tier pro"))
                .unwrap_err()
                .contains("--name")
        );
        assert!(
            NewKey::from_args(args("--name 'a b'"))
                .unwrap_err()
                .contains("--name")
        );
    }
}
