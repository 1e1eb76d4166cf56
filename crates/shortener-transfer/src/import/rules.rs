//! The rules of the API, applied to every line of an import ([`Rules`]): a file can bring
//! nothing that a create could not.

use shortener_core::{Alias, DenyList, Owner, TargetRules};
use time::OffsetDateTime;

use super::Record;

/// The rules a link made through the API obeys, applied to every imported one: a file
/// can bring nothing that a create could not.
#[derive(Debug)]
pub struct Rules<'a> {
    /// The target rules of `[links]`, for `url` and `expired_url`, with the deny list
    /// as it stands.
    pub targets: &'a TargetRules,
    pub deny: &'a DenyList,
    /// `links.case_insensitive_aliases`: codes are stored in lower case, as aliases are
    /// (a visit of the code as written still finds it), so that two codes that differ in
    /// case only are one, the second a conflict.
    pub case_insensitive_aliases: bool,
    /// `--owner`: the owner of every link.
    pub owner: Option<&'a Owner>,
    /// `--keep-owners`: the file's owners are kept; without it (and without `--owner`) a
    /// file cannot place links in an API key's namespace.
    pub keep_owners: bool,
    /// The time of the import: creation times later than this (and a small skew) are
    /// refused, since they would head every listing.
    pub now: OffsetDateTime,
}

/// How far ahead of the import's clock a creation time may be (another machine's clock).
const CLOCK_SKEW: time::Duration = time::Duration::minutes(5);

impl Rules<'_> {
    pub(super) fn apply(&self, record: &mut Record) -> Result<(), String> {
        let link = &mut record.link;
        let code = if self.case_insensitive_aliases {
            link.code.as_str().to_lowercase()
        } else {
            link.code.as_str().to_owned()
        };
        // A code is what an alias may be: not a path the service routes, nor too short.
        let code = Alias::parse(&code).map_err(|e| format!("code `{code}`: {e}"))?;
        link.code = code.into_code();
        if link.max_visits == Some(0) {
            return Err("max_visits: must be at least 1".to_owned());
        }
        for (field, value) in [
            ("max_visits", link.max_visits.unwrap_or_default()),
            ("visits", record.visits),
        ] {
            if i64::try_from(value).is_err() {
                return Err(format!("{field}: must be at most {}", i64::MAX));
            }
        }
        if link.created_at > self.now + CLOCK_SKEW {
            return Err(format!("created_at: {} is in the future", link.created_at));
        }
        match (self.owner, self.keep_owners) {
            (Some(owner), _) => link.owner = Some(owner.clone()),
            (None, true) => {}
            (None, false) => link.owner = None,
        }
        if let Some(hash) = &link.options.password {
            if link.owner.is_none() {
                return Err(
                    "password_hash: a link behind a password needs an owner (--owner, or --keep-owners for the file's)"
                        .to_owned(),
                );
            }
            hash.check_cost()
                .map_err(|e| format!("password_hash: {e}"))?;
        }
        let expired_url = link.options.expired_url.as_ref();
        let own = [
            ("url".to_owned(), Some(&link.url)),
            ("expired_url".to_owned(), expired_url),
        ];
        let rules = (link.options.rules.targets()).map(|(field, url)| (field, Some(url)));
        for (field, url) in own.into_iter().chain(rules) {
            if let Some(url) = url {
                self.targets
                    .check(url, self.deny)
                    .map_err(|refused| format!("{field}: {refused}"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use shortener_core::{
        DenyList, Domain, LinkOptions, NewLink, PasswordHash, ShortCode, Tags, TargetRules,
        TargetUrl,
    };

    use super::super::Reading;
    use super::*;

    const NOW: OffsetDateTime = time::macros::datetime!(2026-12-06 12:00 UTC);

    fn record(code: &str) -> Record {
        Record {
            line: 7,
            link: NewLink {
                domain: Domain::default(),
                code: ShortCode::parse(code).unwrap(),
                url: TargetUrl::parse("https://example.com/").unwrap(),
                created_at: NOW,
                expires_at: None,
                max_visits: None,
                owner: Some(Owner::parse("mallory").unwrap()),
                tags: Tags::default(),
                options: LinkOptions::default(),
            },
            visits: 0,
        }
    }

    fn checked(rules: &Rules<'_>, record: Record) -> Result<Record, String> {
        let mut reading = Reading {
            records: vec![record],
            refused: Vec::new(),
        };
        reading.check(rules);
        match (reading.records.pop(), reading.refused.pop()) {
            (Some(record), None) => Ok(record),
            (None, Some(refusal)) => {
                assert_eq!(refusal.line, 7, "the refusal names the line");
                Err(refusal.reason)
            }
            other => panic!("{other:?}"),
        }
    }

    /// Each rule of a create through the API, broken by one line of a file.
    #[test]
    fn a_file_brings_nothing_a_create_could_not() {
        let (targets, deny) = (TargetRules::default(), DenyList::default());
        let rules = Rules {
            targets: &targets,
            deny: &deny,
            case_insensitive_aliases: false,
            owner: None,
            keep_owners: false,
            now: NOW,
        };
        let hash = |params: &str| {
            PasswordHash::parse(&format!(
                "$argon2id$v=19${params}$c2FsdHNhbHRzYWx0$q5PfnEmCSjWMr/1xBsIjXJr4YQmQnrwUqdmyLUAqfHM"
            ))
            .unwrap()
        };
        let cases: Vec<(Record, &str)> = vec![
            (record("api"), "code `api`: "),
            (record("assets"), "code `assets`: "),
            (record("ab"), "code `ab`: "),
            (
                Record {
                    link: NewLink {
                        max_visits: Some(0),
                        ..record("zero").link
                    },
                    ..record("zero")
                },
                "max_visits: ",
            ),
            (
                Record {
                    link: NewLink {
                        created_at: NOW + time::Duration::days(400),
                        ..record("later").link
                    },
                    ..record("later")
                },
                "created_at: ",
            ),
            (
                Record {
                    visits: u64::MAX,
                    ..record("many")
                },
                "visits: ",
            ),
            (
                Record {
                    link: NewLink {
                        url: TargetUrl::parse("http://127.0.0.1/admin").unwrap(),
                        ..record("inside").link
                    },
                    ..record("inside")
                },
                "url: ",
            ),
        ];
        for (record, reason) in cases {
            let code = record.link.code.clone();
            let refused = checked(&rules, record).unwrap_err();
            assert!(refused.starts_with(reason), "{code}: {refused}");
        }

        // The file's owner is dropped unless asked for; then a password needs one.
        let kept = checked(&rules, record("plain")).unwrap();
        assert_eq!(kept.link.owner, None, "no namespace is planted in");
        let mut locked = record("locked");
        locked.link.options.password = Some(hash("m=19456,t=2,p=1"));
        let refused = checked(&rules, locked.clone()).unwrap_err();
        assert!(refused.starts_with("password_hash: "), "{refused}");
        let keeping = Rules {
            keep_owners: true,
            ..rules
        };
        let kept = checked(&keeping, locked.clone()).unwrap();
        assert_eq!(kept.link.owner.unwrap().as_str(), "mallory");
        // A hash dearer than the service's own, or cheap to crack: refused.
        for params in ["m=1048576,t=2,p=1", "m=4194304,t=1000,p=1", "m=8,t=1,p=1"] {
            locked.link.options.password = Some(hash(params));
            let refused = checked(&keeping, locked.clone()).unwrap_err();
            assert!(
                refused.starts_with("password_hash: "),
                "{params}: {refused}"
            );
        }
        let alice = Owner::parse("alice").unwrap();
        let owned = Rules {
            owner: Some(&alice),
            ..rules
        };
        assert_eq!(
            checked(&owned, record("given")).unwrap().link.owner,
            Some(alice.clone())
        );

        // Codes that differ in case only are one when aliases are case-insensitive.
        let folded = Rules {
            case_insensitive_aliases: true,
            ..rules
        };
        assert_eq!(
            checked(&folded, record("Launch"))
                .unwrap()
                .link
                .code
                .as_str(),
            "launch"
        );
        assert_eq!(
            checked(&rules, record("Launch"))
                .unwrap()
                .link
                .code
                .as_str(),
            "Launch"
        );
    }
}
