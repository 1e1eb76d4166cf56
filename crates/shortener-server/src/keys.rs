//! `shortener keys`: `new` makes a fresh random API key, printed once, with the
//! `[[api_keys]]` block to paste into the configuration (which keeps only the key's
//! SHA-256), or with `--store` keeps it in storage; `list` and `revoke` read and revoke
//! the stored keys. Running nodes follow storage within a second.

use std::fmt::Write as _;
use std::process::ExitCode;

use sha2::{Digest, Sha256};
use shortener_backends::AnyRepository;
use shortener_core::{KeyInsertError, KeyStore as _, StoredKey};
use time::OffsetDateTime;

use crate::cli::{KeysCommand, StoredKeysArgs};

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

/// Runs a `shortener keys` command; `url` says which database (exit 2 when there is
/// none to use).
pub fn run(
    command: KeysCommand,
    url: impl FnOnce(&StoredKeysArgs) -> Result<String, ExitCode>,
) -> ExitCode {
    let fail = |message: String| {
        eprintln!("shortener: {message}");
        ExitCode::FAILURE
    };
    match command {
        KeysCommand::New(request) if !request.store => match request.generate() {
            Ok((_key, text)) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(error) => fail(format!("no randomness for a key: {error}")),
        },
        command => {
            let storage = match &command {
                KeysCommand::New(request) => &request.storage,
                KeysCommand::List(storage) | KeysCommand::Revoke { storage, .. } => storage,
            };
            let url = match url(storage) {
                Ok(url) => url,
                Err(code) => return code,
            };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let done = match runtime {
                Ok(runtime) => runtime.block_on(stored(&url, command)),
                Err(error) => Err(anyhow::anyhow!("cannot start the runtime: {error}")),
            };
            match done {
                Ok(text) => {
                    print!("{text}");
                    ExitCode::SUCCESS
                }
                Err(error) => fail(format!("{error:#}")),
            }
        }
    }
}

/// A command on the stored keys of the database at `url`: what to print.
async fn stored(url: &str, command: KeysCommand) -> anyhow::Result<String> {
    let database = AnyRepository::open_current(url).await?;
    let text = match command {
        KeysCommand::New(request) => {
            let (key, _) = request.generate()?;
            let stored = StoredKey {
                name: request.name.clone(),
                digest: Sha256::digest(key.as_bytes()).into(),
                scopes: request
                    .scopes
                    .iter()
                    .map(|scope| scope.name().to_owned())
                    .collect(),
                owner: request.owner.clone(),
                tier: request.tier.clone(),
                created_at: OffsetDateTime::now_utc(),
                expires_at: None,
                revoked_at: None,
                last_used_at: None,
            };
            match database.insert_key(stored).await {
                Ok(()) => format!(
                    "# The key `{}`, shown once: give it to the client, keep no copy.\n{key}\n",
                    request.name
                ),
                Err(KeyInsertError::NameTaken) => {
                    anyhow::bail!("a key named `{}` is stored already", request.name)
                }
                Err(KeyInsertError::Repository(error)) => return Err(error.into()),
            }
        }
        KeysCommand::List(_) => {
            let mut text =
                String::from("name\tscopes\towner\ttier\tcreated\texpires\trevoked\tlast used\n");
            let time = |at: Option<OffsetDateTime>| at.map_or("-".to_owned(), |at| at.to_string());
            for key in database.keys().await? {
                let _ = writeln!(
                    text,
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    key.name,
                    key.scopes.join(","),
                    key.owner
                        .as_ref()
                        .map_or("-".to_owned(), ToString::to_string),
                    key.tier.as_deref().unwrap_or("-"),
                    key.created_at,
                    time(key.expires_at),
                    time(key.revoked_at),
                    time(key.last_used_at),
                );
            }
            text
        }
        KeysCommand::Revoke { name, .. } => {
            if !database
                .revoke_key(&name, OffsetDateTime::now_utc())
                .await?
            {
                anyhow::bail!("no stored key named `{name}`, or revoked already");
            }
            format!("revoked `{name}`: running nodes refuse it within a second\n")
        }
    };
    database.close().await?;
    Ok(text)
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
            store: false,
            owner: None,
            storage: crate::cli::StoredKeysArgs { database_url: None },
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
