//! The country of a visit, from the operator's MaxMind DB file (`visits.geoip_db`):
//! MaxMind's GeoLite2-Country or GeoIP2-Country, or DB-IP's IP-to-Country Lite, which
//! share the format and the `country.iso_code` field. Read whole into memory with
//! MaxMind's `maxminddb` reader, and read again within a second of a change of the file
//! ([`watch_forever`]); a file that no longer reads is logged and the previous one stays.
//!
//! Only the two-letter code leaves this module; the address it was looked up by is not
//! kept anywhere.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use maxminddb::Reader;
use serde::Deserialize;

use crate::watched::WatchedFile;

/// The part of a record a country is read from.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    country: Option<Country<'a>>,
}

#[derive(Deserialize)]
struct Country<'a> {
    iso_code: Option<&'a str>,
}

/// The database of `visits.geoip_db`, when one is configured.
#[derive(Default)]
pub struct Countries {
    file: Option<PathBuf>,
    current: RwLock<Option<Arc<Reader<Vec<u8>>>>>,
}

impl std::fmt::Debug for Countries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Countries")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl Countries {
    /// The database in `file`, read now.
    ///
    /// # Errors
    /// When the file cannot be read or is not a MaxMind DB.
    pub fn open(file: PathBuf) -> Result<Self, String> {
        let reader =
            Reader::open_readfile(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        Ok(Self {
            file: Some(file),
            current: RwLock::new(Some(Arc::new(reader))),
        })
    }

    /// The ISO 3166-1 alpha-2 code of the country of `ip`, upper case; `None` without a
    /// database, for an address it does not know, or for a record without a code.
    pub fn country(&self, ip: IpAddr) -> Option<[u8; 2]> {
        let reader = self.reader()?;
        let record: Record<'_> = reader.lookup(ip).ok()??;
        match record.country?.iso_code?.as_bytes() {
            &[a, b] if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() => {
                Some([a.to_ascii_uppercase(), b.to_ascii_uppercase()])
            }
            _ => None,
        }
    }

    fn reader(&self) -> Option<Arc<Reader<Vec<u8>>>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Reads `visits.geoip_db` again whenever it changes, until `stop` says so.
pub async fn watch_forever(countries: &Countries, mut stop: tokio::sync::watch::Receiver<bool>) {
    let Some(path) = countries.file.clone() else {
        return;
    };
    let mut file = WatchedFile::new(path);
    while file.changed(&mut stop).await {
        let path = file.path().to_owned();
        let read = tokio::task::spawn_blocking(move || Reader::open_readfile(&path)).await;
        let path = file.path();
        match read {
            Ok(Ok(reader)) => {
                tracing::info!(file = %path.display(), "visits.geoip_db reloaded");
                *countries
                    .current
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(reader));
            }
            Ok(Err(error)) => tracing::error!(
                file = %path.display(),
                %error,
                "visits.geoip_db not reloaded; the previous database stays"
            ),
            Err(error) => tracing::error!(%error, "visits.geoip_db reload did not finish"),
        }
    }
}
