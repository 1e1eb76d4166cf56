//! Link passwords: argon2id hashes in the PHC string format, made and checked on
//! tokio's blocking threads (a hash takes tens of milliseconds and 19 MiB, which would
//! stall an async worker), a bounded number at a time ([`Passwords`]).
//!
//! The parameters are argon2's defaults, OWASP's recommendation (m = 19 MiB, t = 2,
//! p = 1), and every new hash is made with them. Each hash carries its parameters, so a
//! stored hash is checked with its own; only hashes within the band of
//! `PasswordHash::check_cost` (core) are checked at all, so that no stored or imported hash makes a check dearer than ours.
//! The number of checks a client can ask for is bounded by the `unlock` policies, taken
//! before the check (`api::unlock`).

use std::sync::Arc;

use argon2::password_hash::SaltString;
use argon2::password_hash::{PasswordHash as Phc, PasswordHasher as _, PasswordVerifier as _};
use argon2::{Algorithm, Argon2, Params, Version};
use shortener_core::PasswordHash;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Shortest password accepted, in characters.
pub(crate) const MIN_CHARS: usize = 8;
/// Longest password accepted, in bytes: the hash reads every byte.
pub const MAX_BYTES: usize = 1024;
/// The memory of one hash or check with the service's parameters, in KiB (19 MiB).
pub(crate) const MEMORY_KIB: u32 = shortener_core::PASSWORD_MEMORY_KIB;
/// How many waiting hashes each running one may have behind it before more are refused.
const WAITING_PER_RUNNING: usize = 16;

/// Why a password was refused, as the field's message.
///
/// # Errors
/// When the password is shorter than `MIN_CHARS` characters or longer than
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

/// Hashing and checking passwords, a bounded number at a time: each holds
/// `MEMORY_KIB` of memory while it runs, so at most `running` run (one per core, and
/// no more than `links.password_memory_mb` holds), a bounded number wait behind them, and
/// past that a request is refused (`Busy`) rather than queued without end.
#[derive(Debug, Clone)]
pub struct Passwords {
    running: Arc<Semaphore>,
    admitted: Arc<Semaphore>,
}

/// Every place for password work is taken: retry shortly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("password work: every place is taken, retry shortly")]
pub(crate) struct Busy;

/// A place in line for one hash or check, taken before anything else is spent on the
/// request (its unlock token, say), given back when dropped.
#[derive(Debug)]
pub(crate) struct Admission {
    running: Arc<Semaphore>,
    _admitted: OwnedSemaphorePermit,
}

impl Passwords {
    /// Work within `memory_mb` MiB: as many hashes at once as fit, at most one per core,
    /// and at least one.
    pub fn new(memory_mb: u64) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let fit = usize::try_from(memory_mb.saturating_mul(1024) / u64::from(MEMORY_KIB))
            .unwrap_or(usize::MAX);
        let max_running = fit.min(cores).max(1);
        Self {
            running: Arc::new(Semaphore::new(max_running)),
            admitted: Arc::new(Semaphore::new(max_running * (1 + WAITING_PER_RUNNING))),
        }
    }

    /// A place in line, or [`Busy`] when every place is taken.
    ///
    /// # Errors
    /// [`Busy`] when as many hashes run and wait as the bound allows.
    pub(crate) fn admit(&self) -> Result<Admission, Busy> {
        let admitted = Arc::clone(&self.admitted)
            .try_acquire_owned()
            .map_err(|_| {
                metrics::counter!("shortener_password_work_refused_total").increment(1);
                Busy
            })?;
        Ok(Admission {
            running: Arc::clone(&self.running),
            _admitted: admitted,
        })
    }
}

impl Admission {
    /// The hash of `password` with a fresh random salt and the service's parameters.
    ///
    /// # Errors
    /// When the system has no randomness to give, or the blocking pool is gone (shutdown).
    pub async fn hash(self, password: String) -> anyhow::Result<PasswordHash> {
        self.run(move || {
            let mut salt = [0u8; 16];
            getrandom::fill(&mut salt)
                .map_err(|e| anyhow::anyhow!("no randomness for a salt: {e}"))?;
            let salt = SaltString::encode_b64(&salt).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
            let phc = ours()
                .hash_password(password.as_bytes(), &salt)
                .map_err(|e| anyhow::anyhow!("argon2: {e}"))?
                .to_string();
            PasswordHash::parse(&phc).map_err(|e| anyhow::anyhow!("argon2 made {e}"))
        })
        .await?
    }

    /// Whether `password` is the one of `hash`. A hash that does not parse, or whose
    /// parameters are outside the band of `PasswordHash::check_cost`, matches nothing and
    /// costs nothing.
    pub async fn verify(self, password: String, hash: PasswordHash) -> bool {
        if let Err(reason) = hash.check_cost() {
            tracing::warn!(%reason, "a link's password hash is outside the checked band; no password opens it");
            return false;
        }
        self.run(move || {
            Phc::new(hash.as_str()).is_ok_and(|phc| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &phc)
                    .is_ok()
            })
        })
        .await
        .unwrap_or(false)
    }

    /// Runs `work` on the blocking pool once a running place is free. The place moves
    /// into the blocking task, so that a request given up on still holds it until the
    /// hash it started is done: the bound counts the memory, not the requests.
    async fn run<T: Send + 'static>(
        self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let running = Arc::clone(&self.running).acquire_owned().await?;
        Ok(tokio::task::spawn_blocking(move || {
            let _running = running;
            let _admitted = self;
            work()
        })
        .await?)
    }
}

/// The service's own parameters: argon2id, version 19, OWASP's m = 19 MiB, t = 2, p = 1
/// (argon2's defaults, which core's `PASSWORD_MEMORY_KIB` and `PASSWORD_PASSES` name).
fn ours() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_and_no_other() {
        let passwords = Passwords::new(64);
        let hash = passwords
            .admit()
            .unwrap()
            .hash("correct horse".to_owned())
            .await
            .unwrap();
        assert!(hash.as_str().starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert_eq!(hash.check_cost(), Ok(()), "ours are within the band");
        assert_eq!(Params::DEFAULT_M_COST, shortener_core::PASSWORD_MEMORY_KIB);
        assert_eq!(Params::DEFAULT_T_COST, shortener_core::PASSWORD_PASSES);
        let verify = |password: &str| {
            passwords
                .admit()
                .unwrap()
                .verify(password.to_owned(), hash.clone())
        };
        assert!(verify("correct horse").await);
        assert!(!verify("correct horsf").await);
        assert!(!verify("").await);
        // Salted: the same password hashes differently each time.
        let again = passwords
            .admit()
            .unwrap()
            .hash("correct horse".to_owned())
            .await
            .unwrap();
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

    #[tokio::test]
    async fn a_hash_outside_the_band_matches_nothing_not_even_its_password() {
        let passwords = Passwords::new(64);
        // Cheap to crack: m = 8 KiB, one pass.
        let cheap = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(8, 1, 1, None).unwrap(),
        );
        let salt = SaltString::encode_b64(b"saltsaltsalt").unwrap();
        let phc = cheap
            .hash_password(b"correct horse", &salt)
            .unwrap()
            .to_string();
        let hash = PasswordHash::parse(&phc).unwrap();
        assert!(
            !passwords
                .admit()
                .unwrap()
                .verify("correct horse".into(), hash)
                .await
        );
    }

    #[tokio::test]
    async fn past_its_places_password_work_is_refused_and_places_come_back() {
        let passwords = Passwords::new(19);
        assert_eq!(
            passwords.running.available_permits(),
            1,
            "one hash fits in 19 MiB"
        );
        let places: Vec<Admission> = (0..=WAITING_PER_RUNNING)
            .map(|_| passwords.admit().unwrap())
            .collect();
        assert_eq!(passwords.admit().unwrap_err(), Busy);
        drop(places);
        assert!(passwords.admit().is_ok());
    }

    #[test]
    fn the_memory_budget_sets_how_many_run_at_once() {
        let cores = std::thread::available_parallelism().unwrap().get();
        let running = |memory_mb| Passwords::new(memory_mb).running.available_permits();
        assert_eq!(running(0), 1, "at least one");
        assert_eq!(running(40), 2.min(cores));
        assert_eq!(running(100_000), cores);
    }
}
