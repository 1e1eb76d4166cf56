//! Their three quota scenarios (`quota.sh`, `token-quota.sh`,
//! `multiservice-tokenquota.sh`): (service: service_1) has 1 a minute and (service:
//! service_2) 2, both in quota mode, where a request is refused only when every quota
//! descriptor it carries is over; each script spends the quotas, is refused, waits 60 s
//! as theirs does, and is admitted again in the next minute's window.

use std::time::Duration;

use super::{LIMITED, OK, Stack, room_in_the_minute};

/// Their `sleep 60`, for the buckets to be refreshed.
async fn a_minute() {
    tokio::time::sleep(Duration::from_secs(60)).await;
}

/// quota.sh: each request hits both services' quotas: the 1st is within both, the 2nd
/// is over service_1's only, the 3rd over both and refused (the script's comment; its
/// own check of that request passes whatever the answer), and after a minute one is
/// admitted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota() {
    let stack = Stack::start().await;
    room_in_the_minute(Duration::from_secs(8)).await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(stack.status("/quota", &[]).await);
    }
    assert_eq!(statuses, [OK, OK, LIMITED]);
    a_minute().await;
    assert_eq!(stack.status("/quota", &[]).await, OK, "refreshed");
}

/// token-quota.sh: service_2's quota is asked without a hit (hits_addend 0) before the
/// upstream and spent by one once the response is sent: 3 admitted, the 4th refused, and
/// after a minute one admitted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_quota() {
    let stack = Stack::start().await;
    room_in_the_minute(Duration::from_secs(8)).await;
    let mut statuses = Vec::new();
    for number in 1..=4_u64 {
        let status = (stack.status("/tokenquota", &[("request-no", &number.to_string())])).await;
        if status == OK {
            // Its call on the request path and its call once done.
            stack.answered(2 * number).await;
        }
        statuses.push(status);
    }
    assert_eq!(statuses, [OK, OK, OK, LIMITED]);
    a_minute().await;
    let refreshed = stack.status("/tokenquota", &[("request-no", "5")]).await;
    assert_eq!(refreshed, OK, "refreshed");
}

/// multiservice-tokenquota.sh: both quotas are asked without a hit; the answer's dynamic
/// metadata names the first service with quota left, Envoy routes to it, and once the
/// response is sent one hit goes to the service that served it: 2 requests served by
/// service 1, 3 by service 2, the 6th refused, and after a minute service 1 again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multiservice_tokenquota() {
    let stack = Stack::start().await;
    room_in_the_minute(Duration::from_secs(8)).await;
    let mut answers = Vec::new();
    for number in 1..=6_u64 {
        let (status, _, body) = (stack.get(
            "/multiservice-tokenquota",
            &[("request-no", &number.to_string())],
        ))
        .await;
        if status == OK {
            stack.answered(2 * number).await;
        }
        answers.push((status, body));
    }
    let served = |service: &str| (OK, format!("Hello World from Service {service}"));
    assert_eq!(
        answers[..5],
        [
            served("1"),
            served("1"),
            served("2"),
            served("2"),
            served("2")
        ]
    );
    assert_eq!(answers[5].0, LIMITED);
    assert!(
        !answers[5].1.contains("Hello World from Service"),
        "{}",
        answers[5].1
    );
    a_minute().await;
    let (status, _, body) = (stack.get("/multiservice-tokenquota", &[("request-no", "7")])).await;
    assert_eq!((status, body), served("1"), "refreshed: service 1 again");
}
