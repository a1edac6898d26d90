//! The store contract for console sign-in (`SignInStore`): password hashes on users and
//! console sessions with their idle and absolute limits. A backend's contract binary runs
//! it with `sign_in_contract_tests!(an async expression opening a fresh store)`.

use std::sync::Arc;

use sleuth_domain::Role;
use sleuth_store::*;

use crate::fixtures::{self, time};

/// Generates one test per case, like `store_contract_tests!`.
#[macro_export]
macro_rules! sign_in_contract_tests {
    ($open:expr) => {
        $crate::sign_in_contract_tests!(@cases $open;
            a_password_is_stored_as_given_and_a_reset_ends_every_session,
            a_session_lives_until_its_idle_or_absolute_limit_or_sign_out,
            a_deactivated_users_sessions_stop_at_once,
        );
    };
    (@cases $open:expr; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $open.await else {
                    return;
                };
                $crate::contract_sign_in::$case(store).await;
            }
        )+
    };
}

async fn user(store: &Arc<dyn Store>, email: &str, role: Role) -> User {
    store
        .create_user(&fixtures::new_user(email, role))
        .await
        .unwrap()
}

fn new_session(user_id: i64, token: &str, minutes: i64, hours: i64) -> NewSession {
    NewSession {
        token_hash: KeyHash::of(token),
        user_id,
        csrf_secret: format!("csrf-of-{token}"),
        created_at: time(minutes),
        expires_at: time(minutes) + chrono::Duration::hours(hours),
    }
}

/// Finds the session of `token` at minute `minutes`, with a 30-minute idle limit.
async fn find(store: &Arc<dyn Store>, token: &str, minutes: i64) -> Option<Session> {
    store
        .find_session(&KeyHash::of(token), time(minutes), time(minutes - 30))
        .await
        .unwrap()
}

pub async fn a_password_is_stored_as_given_and_a_reset_ends_every_session(store: Arc<dyn Store>) {
    let analyst = user(&store, "Ana@Example.com", Role::Member).await;
    let record = store
        .sign_in_record("  ana@example.COM ")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.user.id, analyst.id);
    assert_eq!(record.password_hash, None, "no password until one is set");
    assert!(!record.must_change_password);
    assert!(
        store
            .sign_in_record("nobody@example.com")
            .await
            .unwrap()
            .is_none()
    );

    let hash = PasswordHash("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into());
    store
        .set_password(analyst.id, &hash, true, time(0))
        .await
        .unwrap();
    let record = store
        .sign_in_record("ana@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.password_hash, Some(hash.clone()));
    assert!(record.must_change_password);

    store
        .create_session(&new_session(analyst.id, "first", 1, 12))
        .await
        .unwrap();
    store
        .create_session(&new_session(analyst.id, "second", 1, 12))
        .await
        .unwrap();
    let found = find(&store, "first", 2).await.unwrap();
    assert!(found.must_change_password);
    assert_eq!(found.csrf_secret, "csrf-of-first");

    let chosen = PasswordHash("$argon2id$v=19$m=19456,t=2,p=1$b3RoZXI$b3RoZXI".into());
    store
        .set_password(analyst.id, &chosen, false, time(3))
        .await
        .unwrap();
    assert!(
        find(&store, "first", 4).await.is_none(),
        "a reset ends sessions"
    );
    assert!(find(&store, "second", 4).await.is_none());
    let record = store
        .sign_in_record("ana@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.password_hash, Some(chosen.clone()));
    assert!(!record.must_change_password);

    let missing = store
        .set_password(analyst.id + 100, &chosen, false, time(5))
        .await;
    assert!(
        matches!(missing, Err(StoreError::NotFound { .. })),
        "{missing:?}"
    );
}

pub async fn a_session_lives_until_its_idle_or_absolute_limit_or_sign_out(store: Arc<dyn Store>) {
    let analyst = user(&store, "ana@example.com", Role::Member).await;
    let session_id = store
        .create_session(&new_session(analyst.id, "token", 0, 2))
        .await
        .unwrap();
    let found = find(&store, "token", 29).await.unwrap();
    assert_eq!(found.id, session_id);
    assert_eq!(found.user.id, analyst.id);
    assert_eq!(found.created_at, time(0));
    assert_eq!(found.last_seen_at, time(0));
    assert_eq!(found.expires_at, time(120));
    assert!(
        find(&store, "token", 31).await.is_none(),
        "idle for 31 minutes"
    );
    assert!(find(&store, "other", 1).await.is_none(), "an unknown token");

    // Used now and then, it lives until its absolute end.
    for minute in [25, 50, 75, 100] {
        store.touch_session(session_id, time(minute)).await.unwrap();
        assert!(find(&store, "token", minute + 10).await.is_some());
    }
    store.touch_session(session_id, time(60)).await.unwrap();
    assert_eq!(
        find(&store, "token", 110).await.unwrap().last_seen_at,
        time(100),
        "a late touch never moves the time back"
    );
    assert!(
        find(&store, "token", 120).await.is_none(),
        "past the absolute end"
    );

    store
        .create_session(&new_session(analyst.id, "another", 200, 2))
        .await
        .unwrap();
    store
        .create_session(&new_session(analyst.id, "signed out", 200, 2))
        .await
        .unwrap();
    store
        .delete_session(&KeyHash::of("signed out"))
        .await
        .unwrap();
    store
        .delete_session(&KeyHash::of("signed out"))
        .await
        .unwrap();
    assert!(find(&store, "signed out", 201).await.is_none());
    assert!(find(&store, "another", 201).await.is_some());

    let deleted = store
        .delete_ended_sessions(time(201), time(201 - 30))
        .await
        .unwrap();
    assert_eq!(deleted, 1, "only the ended session goes");
    assert!(find(&store, "another", 202).await.is_some());
}

pub async fn a_deactivated_users_sessions_stop_at_once(store: Arc<dyn Store>) {
    let _admin = user(&store, "admin@example.com", Role::Admin).await;
    let analyst = user(&store, "ana@example.com", Role::Member).await;
    store
        .create_session(&new_session(analyst.id, "token", 0, 2))
        .await
        .unwrap();
    assert!(find(&store, "token", 1).await.is_some());
    let changes = UserChanges {
        is_active: Some(false),
        ..UserChanges::default()
    };
    store.update_user(analyst.id, &changes).await.unwrap();
    assert!(find(&store, "token", 2).await.is_none());
    let record = store
        .sign_in_record("ana@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(
        !record.user.is_active,
        "the caller refuses an inactive user"
    );
}
