//! Link passwords: argon2id hashes in the PHC string format, made and checked on
//! tokio's blocking threads (a hash takes tens of milliseconds and 19 MiB, which would
//! stall an async worker).
//!
//! The parameters are argon2's defaults, OWASP's recommendation (m = 19 MiB, t = 2,
//! p = 1). Each hash carries its parameters, so a later change of them still verifies
//! every stored hash. The number of checks is bounded by the `unlock` policy, taken
//! before the check ([`crate::api::unlock`]), which also bounds the CPU they cost.

use argon2::Argon2;
use argon2::password_hash::SaltString;
use argon2::password_hash::{PasswordHash as Phc, PasswordHasher as _, PasswordVerifier as _};
use shortener_core::PasswordHash;

/// Shortest password accepted, in characters.
pub const MIN_CHARS: usize = 8;
/// Longest password accepted, in bytes: the hash reads every byte.
pub const MAX_BYTES: usize = 1024;

/// Why a password was refused, as the field's message.
///
/// # Errors
/// When the password is shorter than [`MIN_CHARS`] characters or longer than
/// [`MAX_BYTES`] bytes.
pub fn check(password: &str) -> Result<(), String> {
    if password.chars().count() < MIN_CHARS {
        return Err(format!("must be at least {MIN_CHARS} characters long"));
    }
    if password.len() > MAX_BYTES {
        return Err(format!("must be at most {MAX_BYTES} bytes long"));
    }
    Ok(())
}

/// The hash of `password` with a fresh random salt.
///
/// # Errors
/// When the system has no randomness to give, or the blocking pool is gone (shutdown).
pub async fn hash(password: String) -> anyhow::Result<PasswordHash> {
    tokio::task::spawn_blocking(move || {
        let mut salt = [0u8; 16];
        getrandom::fill(&mut salt).map_err(|e| anyhow::anyhow!("no randomness for a salt: {e}"))?;
        let salt = SaltString::encode_b64(&salt).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
        let phc = Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map_err(|e| anyhow::anyhow!("argon2: {e}"))?
            .to_string();
        PasswordHash::parse(&phc).map_err(|e| anyhow::anyhow!("argon2 made {e}"))
    })
    .await?
}

/// Whether `password` is the one of `hash`. A hash that does not parse matches nothing.
pub async fn verify(password: String, hash: PasswordHash) -> bool {
    tokio::task::spawn_blocking(move || {
        Phc::new(hash.as_str()).is_ok_and(|phc| {
            Argon2::default()
                .verify_password(password.as_bytes(), &phc)
                .is_ok()
        })
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_and_no_other() {
        let hash = hash("correct horse".to_owned()).await.unwrap();
        assert!(hash.as_str().starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(verify("correct horse".to_owned(), hash.clone()).await);
        assert!(!verify("correct horsf".to_owned(), hash.clone()).await);
        assert!(!verify(String::new(), hash.clone()).await);
        // Salted: the same password hashes differently each time.
        let again = super::hash("correct horse".to_owned()).await.unwrap();
        assert_ne!(again, hash);
    }

    #[test]
    fn passwords_are_eight_characters_to_a_kilobyte() {
        assert!(check("12345678").is_ok());
        assert!(
            check("ééééééé").is_err(),
            "seven characters, fourteen bytes"
        );
        assert!(check("éééééééé").is_ok());
        assert!(check(&"x".repeat(MAX_BYTES)).is_ok());
        assert!(check(&"x".repeat(MAX_BYTES + 1)).is_err());
    }
}
