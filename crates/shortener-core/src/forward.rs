//! [`forward_link_repository!`](crate::forward_link_repository): the methods of a
//! `LinkRepository` that a wrapper passes on unchanged, written once here with the trait's
//! signatures, so that a wrapper (a cache, a test's counting store, the server's choice of
//! backend) writes by hand only the methods it changes. The same macro forwards the
//! methods of a `KeyStore` inside an `impl KeyStore` block.

/// Writes, inside an `impl LinkRepository for Wrapper` block, each named method as the
/// same call on what the wrapper wraps, awaited:
///
/// - `forward_link_repository!(self.inner => list, tags, health);` calls `self.inner`;
/// - `forward_link_repository!(each!(self) => insert, get);` calls
///   `each!(self, r => r.insert(link).await)`, for a wrapper that is an enum of
///   repositories and a macro of its own that matches on it.
///
/// A method left out keeps the trait's default (where it has one) or is written by hand.
/// Forward the defaulted methods (`insert_many`, `get_redirect`, `get_many`, `get_fresh`)
/// too unless the wrapper means to route them through its other methods: the wrapped
/// store's own is usually faster.
#[macro_export]
macro_rules! forward_link_repository {
    ($this:ident . $field:ident => $($method:ident),+ $(,)?) => {
        $( $crate::__forward_method!((field $this $field) $method); )+
    };
    ($each:ident ! ($this:ident) => $($method:ident),+ $(,)?) => {
        $( $crate::__forward_method!((each $each $this) $method); )+
    };
}

/// One method of [`forward_link_repository!`]: its signature, and the call.
#[doc(hidden)]
#[macro_export]
macro_rules! __forward_method {
    (($($to:tt)*) insert) => {
        $crate::__forward_method!(@ ($($to)*) insert(link: $crate::NewLink)
            -> Result<$crate::Link, $crate::InsertError>);
    };
    (($($to:tt)*) insert_many) => {
        $crate::__forward_method!(@ ($($to)*) insert_many(links: Vec<$crate::NewLink>)
            -> $crate::__private::Answer<Vec<Result<$crate::Link, $crate::InsertError>>>);
    };
    (($($to:tt)*) get) => {
        $crate::__forward_method!(@ ($($to)*) get(key: &$crate::LinkKey)
            -> $crate::__private::Answer<Option<$crate::Link>>);
    };
    (($($to:tt)*) get_redirect) => {
        $crate::__forward_method!(@ ($($to)*) get_redirect(key: &$crate::LinkKey)
            -> $crate::__private::Answer<Option<$crate::Redirect>>);
    };
    (($($to:tt)*) get_many) => {
        $crate::__forward_method!(@ ($($to)*) get_many(keys: &[$crate::LinkKey])
            -> $crate::__private::Answer<Vec<Option<$crate::Link>>>);
    };
    (($($to:tt)*) get_fresh) => {
        $crate::__forward_method!(@ ($($to)*) get_fresh(key: &$crate::LinkKey)
            -> $crate::__private::Answer<Option<$crate::Link>>);
    };
    (($($to:tt)*) delete) => {
        $crate::__forward_method!(@ ($($to)*)
            delete(key: &$crate::LinkKey, access: $crate::Access<'_>)
            -> $crate::__private::Answer<bool>);
    };
    (($($to:tt)*) update) => {
        $crate::__forward_method!(@ ($($to)*)
            update(key: &$crate::LinkKey, access: $crate::Access<'_>, patch: &$crate::LinkPatch)
            -> $crate::__private::Answer<Option<$crate::Link>>);
    };
    (($($to:tt)*) list) => {
        $crate::__forward_method!(@ ($($to)*)
            list(access: $crate::Access<'_>, query: &$crate::ListQuery)
            -> $crate::__private::Answer<Vec<$crate::Link>>);
    };
    (($($to:tt)*) count) => {
        $crate::__forward_method!(@ ($($to)*)
            count(access: $crate::Access<'_>, query: &$crate::ListQuery)
            -> $crate::__private::Answer<$crate::ListTotals>);
    };
    (($($to:tt)*) rename_tag) => {
        $crate::__forward_method!(@ ($($to)*)
            rename_tag(access: $crate::Access<'_>, from: &$crate::Tag, to: &$crate::Tag)
            -> $crate::__private::Answer<u64>);
    };
    (($($to:tt)*) delete_tag) => {
        $crate::__forward_method!(@ ($($to)*)
            delete_tag(access: $crate::Access<'_>, tag: &$crate::Tag)
            -> $crate::__private::Answer<u64>);
    };
    (($($to:tt)*) tags) => {
        $crate::__forward_method!(@ ($($to)*) tags(access: $crate::Access<'_>)
            -> $crate::__private::Answer<Vec<$crate::TagCount>>);
    };
    (($($to:tt)*) crawlable) => {
        $crate::__forward_method!(@ ($($to)*) crawlable(domain: &$crate::Domain, limit: usize)
            -> $crate::__private::Answer<Vec<$crate::ShortCode>>);
    };
    (($($to:tt)*) record_visit) => {
        $crate::__forward_method!(@ ($($to)*)
            record_visit(key: &$crate::LinkKey, now: $crate::__private::OffsetDateTime)
            -> $crate::__private::Answer<$crate::VisitOutcome>);
    };
    (($($to:tt)*) add_visits) => {
        $crate::__forward_method!(@ ($($to)*) add_visits(visits: &[$crate::VisitTally])
            -> $crate::__private::Answer<()>);
    };
    (($($to:tt)*) visits_by_day) => {
        $crate::__forward_method!(@ ($($to)*)
            visits_by_day(key: &$crate::LinkKey, from: $crate::__private::Date,
                to: $crate::__private::Date)
            -> $crate::__private::Answer<Vec<$crate::DayVisits>>);
    };
    (($($to:tt)*) add_dimensions) => {
        $crate::__forward_method!(@ ($($to)*)
            add_dimensions(tallies: &[$crate::DimensionTally], top_values: usize)
            -> $crate::__private::Answer<()>);
    };
    (($($to:tt)*) top_values) => {
        $crate::__forward_method!(@ ($($to)*) top_values(query: &$crate::TopQuery<'_>)
            -> $crate::__private::Answer<Vec<$crate::ValueCount>>);
    };
    (($($to:tt)*) claim_idempotency) => {
        $crate::__forward_method!(@ ($($to)*) claim_idempotency(request: &$crate::ClaimRequest)
            -> $crate::__private::Answer<$crate::Claim>);
    };
    (($($to:tt)*) complete_idempotency) => {
        $crate::__forward_method!(@ ($($to)*)
            complete_idempotency(key: &$crate::IdempotencyKey, response: &$crate::StoredResponse)
            -> $crate::__private::Answer<()>);
    };
    (($($to:tt)*) release_idempotency) => {
        $crate::__forward_method!(@ ($($to)*) release_idempotency(key: &$crate::IdempotencyKey)
            -> $crate::__private::Answer<()>);
    };
    (($($to:tt)*) purge_idempotency) => {
        $crate::__forward_method!(@ ($($to)*)
            purge_idempotency(before: $crate::__private::OffsetDateTime)
            -> $crate::__private::Answer<u64>);
    };
    (($($to:tt)*) health) => {
        $crate::__forward_method!(@ ($($to)*) health() -> $crate::__private::Answer<()>);
    };
    (($($to:tt)*) links_to) => {
        $crate::__forward_method!(@ ($($to)*)
            links_to(domain: &$crate::Domain, owner: Option<&$crate::Owner>,
                url: &$crate::TargetUrl, limit: usize)
            -> $crate::__private::Answer<Vec<$crate::Link>>);
    };
    // The methods of `KeyStore`, for an `impl KeyStore` block.
    (($($to:tt)*) insert_key) => {
        $crate::__forward_method!(@ ($($to)*) insert_key(key: $crate::StoredKey)
            -> Result<(), $crate::KeyInsertError>);
    };
    (($($to:tt)*) keys) => {
        $crate::__forward_method!(@ ($($to)*) keys()
            -> $crate::__private::Answer<Vec<$crate::StoredKey>>);
    };
    (($($to:tt)*) revoke_key) => {
        $crate::__forward_method!(@ ($($to)*)
            revoke_key(name: &$crate::Owner, at: $crate::__private::OffsetDateTime)
            -> $crate::__private::Answer<bool>);
    };
    (($($to:tt)*) touch_keys) => {
        $crate::__forward_method!(@ ($($to)*)
            touch_keys(used: &[($crate::Owner, $crate::__private::OffsetDateTime)])
            -> $crate::__private::Answer<()>);
    };
    // The method, its body a call on a field or through the enum's macro. `self` comes in
    // with the wrapper's tokens: a macro cannot name the receiver of a method it did not
    // write.
    (@ (field $this:ident $field:ident) $method:ident($($arg:ident: $ty:ty),*) -> $out:ty) => {
        async fn $method(&$this, $($arg: $ty),*) -> $out {
            $this.$field.$method($($arg),*).await
        }
    };
    (@ (each $each:ident $this:ident) $method:ident($($arg:ident: $ty:ty),*) -> $out:ty) => {
        async fn $method(&$this, $($arg: $ty),*) -> $out {
            $each!($this, r => r.$method($($arg),*).await)
        }
    };
}

/// What the macros' expansions name, wherever they are expanded.
#[doc(hidden)]
pub mod __private {
    pub use time::{Date, OffsetDateTime};

    /// The result of every method but `insert`.
    pub type Answer<T> = Result<T, crate::RepositoryError>;
}
