//! The scripts' calls and the decoding of their replies, without a server.

use redis::Value;

use super::*;

#[test]
fn decodes_replies_and_rejects_nonsense() {
    let policy = Policy::from_interval("p", 5, 1_000).unwrap();
    let (decision, audit) = decode(&Value::Int(-1 - 2_500), &policy, 3).unwrap();
    assert!(!decision.allowed);
    assert_eq!(decision.limit, 5);
    assert_eq!(decision.remaining, 2);
    assert_eq!(decision.retry_after_us, Some(500));
    assert_eq!(decision.reset_after_us, 2_500);
    assert_eq!(audit, AuditRecord::default());
    let (decision, _) = decode(&Value::Int(-1 - 5_000), &policy, 6).unwrap();
    assert_eq!(decision.retry_after_us, None);
    let audited = Value::Array(vec![Value::Int(4_000), Value::Int(17), Value::Int(4)]);
    let (decision, audit) = decode(&audited, &policy, 1).unwrap();
    assert!(decision.allowed);
    assert_eq!(decision.remaining, 4);
    assert_eq!(decision.retry_after_us, Some(0));
    assert_eq!(
        audit,
        AuditRecord {
            now_us: 17,
            version: 4
        }
    );
    for bad in [
        Value::Int(5_001),
        Value::Array(vec![Value::Int(1), Value::Int(2)]),
        Value::Array(vec![Value::Int(1), Value::Int(-2), Value::Int(0)]),
        Value::Nil,
    ] {
        assert!(matches!(
            decode(&bad, &policy, 1),
            Err(LimiterError::Unexpected(_))
        ));
    }
}

#[test]
fn batch_replies_decode_in_order_and_nonsense_is_rejected() {
    let policy = Policy::from_interval("p", 5, 1_000).unwrap();
    let reply = Value::Array(vec![Value::Int(2_500), Value::Int(2)]);
    let decisions = decode_batch(&reply, &policy, 1, 4).unwrap();
    let allowed: Vec<bool> = decisions.iter().map(|d| d.allowed).collect();
    assert_eq!(allowed, [true, true, false, false]);
    assert_eq!(decisions[0].remaining, 1);
    assert_eq!(decisions[1].remaining, 0);
    assert_eq!(decisions[3].retry_after_us, Some(500));
    for bad in [
        Value::Array(vec![Value::Int(2_500), Value::Int(3)]),
        Value::Array(vec![Value::Int(2_500), Value::Int(5)]),
        Value::Array(vec![Value::Int(5_001), Value::Int(0)]),
        Value::Array(vec![Value::Int(-1), Value::Int(0)]),
        Value::Int(7),
    ] {
        assert!(matches!(
            decode_batch(&bad, &policy, 1, 4),
            Err(LimiterError::Unexpected(_))
        ));
    }
    let call = batch_call(&TOKEN_BUCKET, "k", &policy, 1, 3, None);
    let (keys, args) = call.keys_and_args();
    assert_eq!(keys, ["k"]);
    assert_eq!(args, ["5", "1000", "1", "", "0", "0", "3"]);
}

#[test]
fn calls_name_the_key_and_the_audit_counter_in_one_slot() {
    let policy = Policy::from_interval("create", 5, 1_000).unwrap();
    let key = "rl:{203.0.113.9}:create".to_owned();
    let call = decision_call(&GCRA, &key, &policy, 2, 0, None, true);
    let (keys, args) = call.keys_and_args();
    assert_eq!(keys, [key.clone(), format!("{key}:audit")]);
    assert_eq!(args, ["5", "1000", "2", "", "1"]);
    let call = decision_call(&TOKEN_BUCKET, &key, &policy, 2, 3, Some(7), false);
    assert_eq!(
        call.keys_and_args(),
        (vec![key], strings(&["5", "1000", "2", "7", "0", "3"]))
    );
    assert_eq!(call.evalsha().args_iter().count(), 3 + 1 + 6);
    // EVAL after a NOSCRIPT: the source in place of the hash, the rest the same.
    let eval = call.eval();
    let words = |command: &Cmd| -> Vec<Vec<u8>> {
        (command.args_iter())
            .map(|arg| match arg {
                Arg::Simple(bytes) => bytes.to_vec(),
                _ => Vec::new(),
            })
            .collect()
    };
    let (evalsha, eval) = (words(call.evalsha()), words(&eval));
    assert_eq!(
        (&eval[0][..], &eval[1][..]),
        (&b"EVAL"[..], TOKEN_BUCKET.source.as_bytes())
    );
    assert_eq!(
        (&evalsha[0][..], &evalsha[1][..]),
        (&b"EVALSHA"[..], TOKEN_BUCKET.hash.as_bytes())
    );
    assert_eq!(eval[2..], evalsha[2..]);
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}
