//! `sleuth user set-password`: set or reset a user's console password from the shell.
//! The password is read from standard input (its first line), never from the command
//! line, where other users of the machine and the shell's history would see it.

use std::io::BufRead;

use clap::Subcommand;
use serde_json::json;
use sleuth_jobs::Settings;

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum UserCommand {
    /// Set a user's console password, read from the first line of standard input
    /// (`sleuth user set-password --email ana@example.com < file`, or type it). Every
    /// console session of the user ends.
    SetPassword {
        #[arg(long)]
        email: String,
        /// Let the user keep this password: without it they choose their own at their
        /// next sign-in.
        #[arg(long)]
        keep: bool,
    },
}

pub(crate) async fn run(settings: &Settings, command: UserCommand) -> anyhow::Result<()> {
    match command {
        UserCommand::SetPassword { email, keep } => set_password(settings, &email, keep).await,
    }
}

async fn set_password(settings: &Settings, email: &str, keep: bool) -> anyhow::Result<()> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let password = line.trim_end_matches(['\n', '\r']).to_string();
    let store = open_store(settings).await?;
    let Some(user) = store.find_user_by_email(email).await? else {
        anyhow::bail!(
            "there is no user {email}; create one with `sleuth apikey create` or the API"
        );
    };
    if let Err(problem) = sleuth_server::passwords::check_new(&password, &user.email) {
        anyhow::bail!("{problem}");
    }
    let hash = sleuth_server::passwords::hash_blocking(password).await;
    store
        .set_password(user.id, &hash, !keep, chrono::Utc::now())
        .await?;
    crate::audit::record(
        &store,
        "user set-password",
        "user",
        Some(user.id.to_string()),
        json!({"user_email": user.email, "must_change": !keep}),
    )
    .await?;
    println!(
        "The console password of {} is set{}.",
        user.email,
        if keep {
            ""
        } else {
            "; they choose their own at their next sign-in"
        }
    );
    Ok(())
}
