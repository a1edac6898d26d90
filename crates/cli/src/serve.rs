//! `sleuth serve` and `sleuth worker`: start-up, the first admin, workers and the
//! connector runtime, shutdown.

use std::sync::Arc;

use sleuth_domain::{EmailAddress, Role};
use sleuth_jobs::{Runtime, Settings};
use sleuth_server::AppState;
use sleuth_store::{NewApiKey, NewUser, Store};
use tokio::sync::watch;

use crate::open::open_store;

/// The email of the admin created on first start.
pub(crate) const FIRST_ADMIN_EMAIL: &str = "admin@sleuth.local";

pub(crate) async fn serve(settings: Settings) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&settings.server.listen)
        .await
        .map_err(|error| anyhow::anyhow!("cannot listen on {}: {error}", settings.server.listen))?;
    let address = listener.local_addr()?;
    let runtime = runtime_with_context(&settings)?;
    runtime.set_sandbox(crate::sandbox::probe(&settings).await?);
    let (stop_workers, workers_stopped) = watch::channel(false);
    // The context is re-read when its files or the API's document change.
    let context_watcher = workers_stopped.clone();
    let starter = tokio::spawn(start_when_database_is_ready(
        runtime.clone(),
        address.to_string(),
        workers_stopped,
        context_watcher,
    ));
    tracing::info!(%address, database = %sleuth_jobs::settings::redact_url_password(&settings.database.url), "Sleuth is listening");
    let limits = sleuth_server::ConnectionLimits::from(&settings.server);
    let state = AppState::from_runtime(runtime);
    // Event streams never end by themselves, and a graceful shutdown waits for every
    // answer to end: they are ended as the shutdown begins.
    let streams_state = state.clone();
    let shutdown = async move {
        shutdown_signal().await;
        streams_state.event_streams().close_all();
    };
    sleuth_server::serve(listener, sleuth_server::build(state), limits, shutdown).await?;
    tracing::info!("HTTP stopped; stopping workers");
    let _ = stop_workers.send(true);
    if let Ok(Some(workers)) = starter.await {
        let _ = workers.await;
    }
    Ok(())
}

pub(crate) async fn worker(settings: Settings) -> anyhow::Result<()> {
    let store = open_store(&settings).await?;
    let sandbox = crate::sandbox::probe(&settings).await?;
    let state = runtime_with_context(&settings)?;
    state.set_sandbox(sandbox);
    state.set_store(store.clone());
    state.prepare_secrets(&store).await;
    sleuth_jobs::firing::prepare(&state, &store).await;
    let (stop_workers, workers_stopped) = watch::channel(false);
    with_api_context(&state, &store, workers_stopped.clone()).await;
    let connectors = state.settings().connectors.enabled.then(|| {
        tokio::spawn(sleuth_jobs::connector_runtime::run(
            state.clone(),
            store.clone(),
            workers_stopped.clone(),
        ))
    });
    let notifications = state.settings().notifications.enabled.then(|| {
        tokio::spawn(sleuth_jobs::notify_delivery::run(
            state.clone(),
            store.clone(),
            workers_stopped.clone(),
        ))
    });
    let workers = tokio::spawn(sleuth_jobs::workers::run_pool(
        state,
        store,
        workers_stopped,
    ));
    shutdown_signal().await;
    let _ = stop_workers.send(true);
    let _ = workers.await;
    for task in [connectors, notifications].into_iter().flatten() {
        let _ = task.await;
    }
    Ok(())
}

/// The runtime with the operator's context file and the secrets key loaded. A
/// context file or a key that does not load stops start-up with its reason: better than
/// investigating without it, or storing secrets no process can open.
fn runtime_with_context(settings: &Settings) -> anyhow::Result<Runtime> {
    let state = Runtime::new(settings.clone(), sleuth_engine::Context::empty());
    if let Some(keyring) = crate::secret::keyring(settings)? {
        state.set_keyring(keyring);
    }
    let path = settings.engine.context_file.as_deref();
    let now = chrono::Utc::now();
    let loaded = sleuth_jobs::context_source::load(path, None, now)
        .map_err(|error| anyhow::anyhow!("the context does not load: {error}"))?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    state.put_context(loaded, None, now);
    Ok(state)
}

/// Merges in the context document kept through the API, and keeps the context current.
async fn with_api_context(state: &Runtime, store: &Arc<dyn Store>, stop: watch::Receiver<bool>) {
    if let Err(error) = sleuth_jobs::context_source::reload(state, Some(store)).await {
        tracing::error!(
            "the context document from the API did not load; the file's context stays: {error}"
        );
        state.context_failed(error);
    }
    tokio::spawn(sleuth_jobs::context_source::watch(
        state.clone(),
        Some(store.clone()),
        stop,
    ));
}

/// Connects (retrying while the database is unreachable), then makes the API ready, creates
/// the first admin on an empty database, and starts the workers.
async fn start_when_database_is_ready(
    state: Runtime,
    address: String,
    workers_stopped: watch::Receiver<bool>,
    context_watcher: watch::Receiver<bool>,
) -> Option<tokio::task::JoinHandle<()>> {
    let store = loop {
        match open_store(state.settings()).await {
            Ok(store) => break store,
            Err(error) => {
                tracing::warn!("{error:#}; retrying in {:?}", sleuth_server::CONNECT_RETRY);
                tokio::time::sleep(sleuth_server::CONNECT_RETRY).await;
            }
        }
    };
    if let Err(error) = create_first_admin(&store, &address).await {
        tracing::error!("could not create the first admin: {error:#}");
    }
    with_api_context(&state, &store, context_watcher).await;
    state.prepare_secrets(&store).await;
    state.set_store(store.clone());
    sleuth_jobs::firing::prepare(&state, &store).await;
    tokio::spawn(sleuth_jobs::retention::run(
        store.clone(),
        state.settings().retention.clone(),
        workers_stopped.clone(),
    ));
    tracing::info!(
        backend = store.backend().as_str(),
        "database ready; API accepting requests"
    );
    let connectors = state.settings().connectors.enabled.then(|| {
        tokio::spawn(sleuth_jobs::connector_runtime::run(
            state.clone(),
            store.clone(),
            workers_stopped.clone(),
        ))
    });
    let notifications = state.settings().notifications.enabled.then(|| {
        tokio::spawn(sleuth_jobs::notify_delivery::run(
            state.clone(),
            store.clone(),
            workers_stopped.clone(),
        ))
    });
    let workers = state.settings().workers.enabled.then(|| {
        tokio::spawn(sleuth_jobs::workers::run_pool(
            state,
            store,
            workers_stopped,
        ))
    });
    if workers.is_none() && connectors.is_none() && notifications.is_none() {
        return None;
    }
    Some(tokio::spawn(async move {
        for task in [workers, connectors, notifications].into_iter().flatten() {
            let _ = task.await;
        }
    }))
}

async fn create_first_admin(store: &Arc<dyn Store>, address: &str) -> anyhow::Result<()> {
    let (secret, hash, prefix) = sleuth_server::auth::generate_key();
    let user = NewUser {
        email: EmailAddress::parse(FIRST_ADMIN_EMAIL)?,
        first_name: "Sleuth".into(),
        last_name: "Admin".into(),
        role: Role::Admin,
        oidc_user_id: None,
        tenant_scope: sleuth_store::TenantScope::All,
    };
    let key = NewApiKey {
        user_id: 0,
        name: "first admin key".into(),
        hash,
        prefix,
        tenant_scope: sleuth_store::TenantScope::All,
    };
    if let Some(admin) = store.bootstrap_admin(&user, &key).await? {
        // The key must be shown whatever happens: it is the only way in.
        if let Err(error) = crate::audit::record(
            store,
            "serve first admin",
            "user",
            Some(admin.id.to_string()),
            serde_json::json!({"user_email": admin.email, "role": admin.role.as_str()}),
        )
        .await
        {
            tracing::error!("{error:#}");
        }
        // A console password too, to be changed at the first sign-in. Should storing it
        // fail, the key still works and `sleuth user set-password` sets one.
        let password = sleuth_server::passwords::generate();
        let hash = sleuth_server::passwords::hash_blocking(password.clone()).await;
        let console = match store
            .set_password(admin.id, &hash, true, chrono::Utc::now())
            .await
        {
            Ok(()) => format!(
                "The console: http://{address}/ — sign in as {FIRST_ADMIN_EMAIL} with the\n\
                 password below (shown only this once; you choose your own at the first\n\
                 sign-in):\n\n    {password}\n\n"
            ),
            Err(error) => {
                tracing::error!("could not set the first admin's console password: {error}");
                "No console password was set; set one with `sleuth user set-password`.\n\n"
                    .to_string()
            }
        };
        println!(
            "\n==================================================================\n\
             Sleuth created its first admin user ({FIRST_ADMIN_EMAIL}).\n\
             {console}\
             Its API key is shown only this once; keep it safe:\n\n    {secret}\n\n\
             Try it:\n    curl -H \"Authorization: {secret}\" http://{address}/app/api/v1/investigation\n\
             ==================================================================\n"
        );
    }
    Ok(())
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => tracing::info!("interrupted; shutting down"),
        () = terminate => tracing::info!("terminated; shutting down"),
    }
}
