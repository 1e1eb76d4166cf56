//! The macros that stamp one test per scenario for an adapter.

/// One `#[tokio::test]` (multi-thread, 2 workers) per [`repository`](crate::repository)
/// scenario, each on a fresh repository from `make`.
///
/// `make` is a path to an `async fn make() -> R` where `R: LinkRepository`. The tests live
/// in a module `link_repository_conformance`; invoke the macro at most once per module.
///
/// ```ignore
/// async fn make() -> MemoryRepository {
///     MemoryRepository::default()
/// }
/// shortener_conformance::link_repository_tests!(make);
/// ```
#[macro_export]
macro_rules! link_repository_tests {
    ($make:path) => {
        $crate::__link_repository_tests! {
            $make;
            insert_then_get_returns_every_field
            insert_of_an_existing_code_is_code_taken
            insert_many_answers_each_link
            get_many_answers_each_code_in_order
            concurrent_inserts_of_one_code_admit_one
            codes_are_case_sensitive
            delete_then_get_is_none
            record_visit_counts_exactly_max_visits
            record_visit_on_an_expired_link_is_expired
            record_visit_on_an_unknown_code_is_not_found
            add_visits_adds_and_skips_unknown_codes
            health_is_ok
        }
        $crate::__link_repository_tests! {
            @module manage as link_management_conformance;
            $make;
            update_changes_named_fields_only
            update_and_delete_stay_within_access
            list_pages_newest_first_within_owner
            pages_by_number_skip_and_count_what_matches
            list_walk_survives_concurrent_inserts
            visits_by_day_add_up_and_go_with_the_link
        }
        $crate::__link_repository_tests! {
            @module options as link_options_conformance;
            $make;
            options_are_edited_like_every_field
            crawlable_links_are_listed_in_code_order
            search_matches_titles
            listings_are_ordered_by_age_and_visits
        }
        $crate::__link_repository_tests! {
            @module dimensions as visit_dimensions_conformance;
            $make;
            dimensions_are_counted_capped_and_summed
            a_flood_of_values_stays_bounded
            concurrent_flushes_keep_the_cap
        }
        $crate::__link_repository_tests! {
            @module domains as link_domains_conformance;
            $make;
            codes_are_unique_per_domain
            links_to_a_target_are_found_by_domain_and_owner
        }
        $crate::__link_repository_tests! {
            @module tags as link_tags_conformance;
            $make;
            tags_are_stored_filtered_and_replaced
            tag_counts_are_the_caller_s
            tags_are_renamed_and_deleted_within_the_caller_s_links
            listings_narrow_by_any_tag_creation_and_live_links
        }
        $crate::__link_repository_tests! {
            @module idempotency as idempotency_conformance;
            $make;
            idempotency_claim_complete_replay
            idempotency_leases_and_expiry
            concurrent_claims_of_one_key_admit_one
        }
        $crate::__link_repository_tests! {
            @module keys as key_store_conformance;
            $make;
            keys_are_made_revoked_and_touched
            expiry_is_read_from_what_is_stored
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __link_repository_tests {
    (@module $module:ident as $name:ident; $make:path; $($scenario:ident)*) => {
        #[cfg(test)]
        mod $name {
            $(
                #[$crate::__private::tokio::test(
                    flavor = "multi_thread",
                    worker_threads = 2,
                    crate = "::shortener_conformance::__private::tokio"
                )]
                async fn $scenario() {
                    let repository = super::__conformance_make_link_repository().await;
                    $crate::$module::$scenario(&repository).await;
                }
            )*
        }
    };
    ($make:path; $($scenario:ident)*) => {
        #[cfg(test)]
        async fn __conformance_make_link_repository()
        -> impl $crate::__private::LinkRepository + $crate::__private::KeyStore {
            $make().await
        }

        #[cfg(test)]
        mod link_repository_conformance {
            $(
                #[$crate::__private::tokio::test(
                    flavor = "multi_thread",
                    worker_threads = 2,
                    crate = "::shortener_conformance::__private::tokio"
                )]
                async fn $scenario() {
                    let repository = super::__conformance_make_link_repository().await;
                    $crate::repository::$scenario(&repository).await;
                }
            )*
        }
    };
}

/// One `#[tokio::test]` (multi-thread, 2 workers) per [`limiter`](crate::limiter) scenario
/// and per algorithm, each on a fresh limiter from `make`.
///
/// `make` is a path to an `async fn make(algorithm: shortener_core::Algorithm) -> L` where
/// `L: RateLimiter`. The tests live in `rate_limiter_conformance::{token_bucket, gcra}`;
/// invoke the macro at most once per module.
///
/// ```ignore
/// async fn make(algorithm: Algorithm) -> MemoryRateLimiter {
///     MemoryRateLimiter::new(algorithm)
/// }
/// shortener_conformance::rate_limiter_tests!(make);
/// ```
#[macro_export]
macro_rules! rate_limiter_tests {
    ($make:path) => {
        #[cfg(test)]
        async fn __conformance_make_rate_limiter(
            algorithm: $crate::__private::Algorithm,
        ) -> impl $crate::__private::RateLimiter {
            $make(algorithm).await
        }

        #[cfg(test)]
        mod rate_limiter_conformance {
            $crate::__rate_limiter_tests!(token_bucket, TokenBucket);
            $crate::__rate_limiter_tests!(gcra, Gcra);
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __rate_limiter_tests {
    ($module:ident, $algorithm:ident) => {
        $crate::__rate_limiter_tests! {
            @scenarios $module, $algorithm;
            burst_is_admitted_then_refused
            refused_request_changes_nothing
            cost_above_capacity_is_refused_as_never
            cost_n_takes_n
            identities_and_policies_are_independent
            policy_and_identity_never_alias
            concurrent_acquires_admit_exactly_capacity
            fast_policy_admits_again_after_refill
            health_is_ok
        }
    };
    (@scenarios $module:ident, $algorithm:ident; $($scenario:ident)*) => {
        mod $module {
            $(
                #[$crate::__private::tokio::test(
                    flavor = "multi_thread",
                    worker_threads = 2,
                    crate = "::shortener_conformance::__private::tokio"
                )]
                async fn $scenario() {
                    let limiter = super::super::__conformance_make_rate_limiter(
                        $crate::__private::Algorithm::$algorithm,
                    )
                    .await;
                    $crate::limiter::$scenario(&limiter).await;
                }
            )*
        }
    };
}
