//! `sleuth apikey create|list|revoke|scope`: keys for people and integrations, from the
//! shell, and the tenant unions a user and their keys may reach.

use clap::Subcommand;
use serde_json::json;
use sleuth_domain::{EmailAddress, Role, parse_person_name};
use sleuth_jobs::Settings;
use sleuth_jobs::firing;
use sleuth_jobs::trigger_catalog::{API_KEY_CREATED, API_KEY_REVOKED, USER_CREATED};
use sleuth_store::{NewApiKey, NewUser, TenantScope, UserChanges};

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum ApikeyCommand {
    /// Create a key (and its user, if new). The key is printed alone on the last line.
    Create {
        /// admin, member or restricted-read-only.
        #[arg(long)]
        role: String,
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "")]
        first_name: String,
        #[arg(long, default_value = "")]
        last_name: String,
        /// A label for the key (which integration or person uses it).
        #[arg(long, default_value = "cli")]
        name: String,
        /// Bind the key to this tenant union id (repeat for several); a user this command
        /// creates is bound to the same. Without it the key takes its user's unions (an
        /// unbound user: every union).
        #[arg(long = "tenant-union", value_name = "ID")]
        tenant_unions: Vec<i64>,
    },
    /// Bind a user, and so every key of theirs, to tenant unions (`--tenant-union`,
    /// repeatable), or unbind them (`--all-tenant-unions`).
    Scope {
        #[arg(long)]
        email: String,
        #[arg(
            long = "tenant-union",
            value_name = "ID",
            required_unless_present = "all_tenant_unions"
        )]
        tenant_unions: Vec<i64>,
        #[arg(long, conflicts_with = "tenant_unions")]
        all_tenant_unions: bool,
    },
    /// List keys (never their secrets).
    List,
    /// Revoke a key by id. A running server that checked the key in the last 2 seconds
    /// still honours it until then (revoked over the API, it stops at once).
    Revoke { id: i64 },
}

pub(crate) async fn run(settings: &Settings, command: ApikeyCommand) -> anyhow::Result<()> {
    let store = open_store(settings).await?;
    match command {
        ApikeyCommand::Create {
            role,
            email,
            first_name,
            last_name,
            name,
            tenant_unions,
        } => {
            let role = Role::parse(&role)?;
            let asked = scope_of(&tenant_unions);
            let email = EmailAddress::parse(&email)?;
            let existing = store.find_user_by_email(email.as_str()).await?;
            let is_new_user = existing.is_none();
            let user = match existing {
                Some(user) if user.role != role => anyhow::bail!(
                    "{email} exists with role {}; not creating a {role} key for it",
                    user.role
                ),
                Some(user) => user,
                None => {
                    store
                        .create_user(&NewUser {
                            email,
                            first_name: parse_person_name("first_name", &first_name)?,
                            last_name: parse_person_name("last_name", &last_name)?,
                            role,
                            oidc_user_id: None,
                            tenant_scope: asked.clone(),
                        })
                        .await?
                }
            };
            let tenant_scope = if tenant_unions.is_empty() {
                user.tenant_scope.clone()
            } else {
                asked
            };
            let (secret, hash, prefix) = sleuth_server::auth::generate_key();
            let key = store
                .create_api_key(&NewApiKey {
                    user_id: user.id,
                    name,
                    hash,
                    prefix,
                    tenant_scope,
                })
                .await?;
            crate::audit::record(
                &store,
                "apikey create",
                "api-key",
                Some(key.id.to_string()),
                json!({
                    "name": key.name,
                    "user_id": user.id,
                    "user_email": user.email,
                    "role": user.role.as_str(),
                    "user_created": is_new_user,
                    "tenant_union_ids": key.tenant_scope.union_ids(),
                }),
            )
            .await
            .map_err(|error| {
                error.context(format!(
                    "key {} was created but is not shown; revoke it with `sleuth apikey revoke {}`",
                    key.id, key.id
                ))
            })?;
            eprintln!(
                "created key {} for {} ({}), reaching {}",
                key.id,
                user.email,
                user.role,
                user.tenant_scope.narrowed(&key.tenant_scope)
            );
            println!("{secret}");
            if is_new_user {
                fire(settings, &store, USER_CREATED, &firing::user_firing(&user)).await;
            }
            let key_firing = firing::api_key_firing(&key, &user);
            fire(settings, &store, API_KEY_CREATED, &key_firing).await;
        }
        ApikeyCommand::List => {
            println!(
                "{:>5}  {:<14}  {:<32}  {:<20}  {:<25}  revoked",
                "id", "prefix", "user", "name", "last used"
            );
            for key in store.list_api_keys().await? {
                println!(
                    "{:>5}  {:<14}  {:<32}  {:<20}  {:<25}  {}",
                    key.id,
                    key.prefix,
                    key.user_email,
                    key.name,
                    key.last_used_at
                        .map_or_else(|| "never".into(), |time| time.to_rfc3339()),
                    key.revoked_at
                        .map_or_else(|| "-".into(), |time| time.to_rfc3339()),
                );
            }
        }
        ApikeyCommand::Scope {
            email,
            tenant_unions,
            all_tenant_unions,
        } => {
            let scope = if all_tenant_unions {
                TenantScope::All
            } else {
                scope_of(&tenant_unions)
            };
            let user = store
                .find_user_by_email(EmailAddress::parse(&email)?.as_str())
                .await?
                .ok_or_else(|| anyhow::anyhow!("there is no user {email}"))?;
            let changes = UserChanges {
                tenant_scope: Some(scope),
                ..UserChanges::default()
            };
            let user = store.update_user(user.id, &changes).await?;
            crate::audit::record(
                &store,
                "apikey scope",
                "user",
                Some(user.id.to_string()),
                json!({"user_email": user.email, "tenant_union_ids": user.tenant_scope.union_ids()}),
            )
            .await?;
            println!(
                "{} now reaches {}; their keys reach no more (servers already running apply it \
                 within {} s)",
                user.email,
                user.tenant_scope,
                sleuth_store::KEY_CACHE_TTL.as_secs()
            );
        }
        ApikeyCommand::Revoke { id } => {
            let key = store.revoke_api_key(id, chrono::Utc::now()).await?;
            crate::audit::record(
                &store,
                "apikey revoke",
                "api-key",
                Some(key.id.to_string()),
                json!({"name": key.name, "user_id": key.user_id, "user_email": key.user_email}),
            )
            .await?;
            println!(
                "revoked key {} ({}) of {}; servers already running refuse it within {} s",
                key.id,
                key.prefix,
                key.user_email,
                sleuth_store::KEY_CACHE_TTL.as_secs()
            );
            let user = store.get_user(key.user_id).await?;
            let key_firing = firing::api_key_firing(&key, &user);
            fire(settings, &store, API_KEY_REVOKED, &key_firing).await;
        }
    }
    Ok(())
}

/// Runs the response actions on `trigger`. The key or user change already happened, so a
/// failure here is reported but does not fail the command.
async fn fire(
    settings: &Settings,
    store: &std::sync::Arc<dyn sleuth_store::Store>,
    trigger: &str,
    firing: &firing::Firing,
) {
    if let Err(error) = crate::sandbox::fire_and_wait(settings, store, &[trigger], firing).await {
        eprintln!("warning: the response actions on {trigger} could not run: {error:#}");
    }
}

/// The scope `--tenant-union` names: every union when it names none.
fn scope_of(tenant_unions: &[i64]) -> TenantScope {
    if tenant_unions.is_empty() {
        TenantScope::All
    } else {
        TenantScope::unions(tenant_unions.iter().copied())
    }
}
