//! What every store adapter does alike with what it read: answers put back in the order
//! asked, stored dimension rows read back, sums checked.

use std::collections::HashMap;

use time::Date;

use crate::dimensions::{Dimension, StoredValues, ValueCount};
use crate::domain::ShortCode;
use crate::key::{Domain, LinkKey};
use crate::link::Link;
use crate::repository::{InsertError, RepositoryError};

/// The answer of [`crate::LinkRepository::get_many`] from the links a store found for `keys`
/// (in any order, each once): each key's link in the order asked.
pub fn in_order_of(keys: &[LinkKey], found: Vec<Link>) -> Vec<Option<Link>> {
    let by_key: HashMap<LinkKey, Link> = found.into_iter().map(|link| (link.key(), link)).collect();
    keys.iter().map(|key| by_key.get(key).cloned()).collect()
}

/// The answer of [`crate::LinkRepository::insert_many`] from the links a store wrote of a batch
/// whose codes were `asked`, in order, skipping codes that were taken: the first link of
/// each code written gets its stored link, and every other is [`InsertError::CodeTaken`]
/// (its code existed, or an earlier link of the batch took it).
pub fn inserted_in_order<'a>(
    asked: impl IntoIterator<Item = (&'a Domain, &'a ShortCode)>,
    written: Vec<Link>,
) -> Vec<Result<Link, InsertError>> {
    let mut written: HashMap<(Domain, ShortCode), Link> = written
        .into_iter()
        .map(|link| ((link.domain.clone(), link.code.clone()), link))
        .collect();
    asked
        .into_iter()
        .map(|(domain, code)| {
            (written.remove(&(domain.clone(), code.clone()))).ok_or(InsertError::CodeTaken)
        })
        .collect()
}

/// Adds one row a store holds (its code, its domain as stored, its day, its dimension's
/// name and its value) to `stored`.
///
/// # Errors
/// [`RepositoryError::Unexpected`] when the row holds what this program would not have
/// written.
pub fn add_stored(
    stored: &mut StoredValues,
    (code, domain, day, dimension, value): (String, &str, Date, &str, String),
) -> Result<(), RepositoryError> {
    let corrupt = || RepositoryError::Unexpected("a stored dimension row is invalid".into());
    let key = LinkKey::new(
        Domain::from_stored(domain).map_err(|_| corrupt())?,
        ShortCode::try_from(code).map_err(|_| corrupt())?,
    );
    let dimension = Dimension::parse(dimension).ok_or_else(corrupt)?;
    stored
        .entry((key, day, dimension))
        .or_default()
        .insert(value);
    Ok(())
}

impl ValueCount {
    /// A value and its sum as a store answers them (a signed 64-bit sum).
    ///
    /// # Errors
    /// [`RepositoryError::Unexpected`] for a negative sum.
    pub fn from_sum((value, visits): (String, i64)) -> Result<Self, RepositoryError> {
        let visits = u64::try_from(visits).map_err(|_| {
            RepositoryError::Unexpected(format!("a negative count of {value}").into())
        })?;
        Ok(Self { value, visits })
    }
}
