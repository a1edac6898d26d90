//! Cloud and application alerts: IAM and configuration changes (new keys, escalated
//! policies, disabled logging, public exposure), cryptomining, credentials used from
//! outside, accounts that are not the organisation's, and exposed secrets.

use serde_json::json;
use sleuth_domain::{AlertCategory, CloudSignal, EntityKind, SecretSignal};

use crate::case::Case;
use crate::context::Context;
use crate::judgement::{Covers, Judgement, Weight};
use crate::vocabulary::{
    CONTAINER_EXEC_WORDS, CRYPTOMINING_WORDS, INSTANCE_CREDENTIAL_WORDS, PUBLIC_EXPOSURE_WORDS,
    ROOT_WORDS,
};

pub(crate) fn applies(case: &Case<'_>) -> bool {
    case.category() == Some(AlertCategory::Cloud) || case.signals.cloud.is_some()
}

pub(crate) fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let empty = CloudSignal::default();
    let cloud = case.signals.cloud.as_ref().unwrap_or(&empty);
    risky_operation(case, cloud, out);
    container_exec(case, cloud, out);
    cryptomining(case, out);
    credential_exfiltration(case, out);
    principal(case, cloud, out);
    foreign_account(case, out);
    exposure(case, cloud, out);
    // An account id alone says where, not who or what: nothing to check or act on.
    let names_actor_or_target = cloud.principal.is_some()
        || cloud.resource.is_some()
        || case
            .known
            .iter()
            .any(|(entity, _)| !matches!(entity.kind, EntityKind::CloudAccount));
    if !names_actor_or_target {
        out.push(Judgement::new(
            Weight::Missing,
            "No identity, resource, host or address",
            "The cloud alert names at most an account: no acting identity, resource, host or address, so \
             nothing can be checked or acted on. Send the principal and the resource with the alert.",
        ));
    }
}

/// API calls that change who can do what, or hide what happens: (operation, tactic, why).
/// Posture changes (a bucket made public) name no tactic: no attacker is implied yet.
const RISKY_OPERATIONS: &[(&str, Option<&str>, &str)] = &[
    (
        "stoplogging",
        Some("Defense Evasion"),
        "stopped audit logging",
    ),
    (
        "deletetrail",
        Some("Defense Evasion"),
        "deleted an audit trail",
    ),
    (
        "updatetrail",
        Some("Defense Evasion"),
        "changed an audit trail",
    ),
    (
        "deleteflowlogs",
        Some("Defense Evasion"),
        "deleted network flow logs",
    ),
    (
        "deletedetector",
        Some("Defense Evasion"),
        "deleted the threat detector",
    ),
    (
        "disablesecurityhub",
        Some("Defense Evasion"),
        "disabled the security findings service",
    ),
    (
        "putbucketlogging",
        Some("Defense Evasion"),
        "changed bucket access logging",
    ),
    (
        "deletelogsink",
        Some("Defense Evasion"),
        "deleted a log sink",
    ),
    (
        "createaccesskey",
        Some("Persistence"),
        "created a new access key",
    ),
    (
        "createloginprofile",
        Some("Persistence"),
        "gave an identity a console password",
    ),
    (
        "updateloginprofile",
        Some("Persistence"),
        "changed an identity's console password",
    ),
    ("createuser", Some("Persistence"), "created a user"),
    (
        "attachuserpolicy",
        Some("Privilege Escalation"),
        "attached a policy to a user",
    ),
    (
        "attachrolepolicy",
        Some("Privilege Escalation"),
        "attached a policy to a role",
    ),
    (
        "putuserpolicy",
        Some("Privilege Escalation"),
        "wrote an inline user policy",
    ),
    (
        "putrolepolicy",
        Some("Privilege Escalation"),
        "wrote an inline role policy",
    ),
    (
        "addusertogroup",
        Some("Privilege Escalation"),
        "added a user to a group",
    ),
    (
        "updateassumerolepolicy",
        Some("Privilege Escalation"),
        "changed who may assume a role",
    ),
    (
        "setiampolicy",
        Some("Privilege Escalation"),
        "changed an IAM policy",
    ),
    (
        "createserviceaccountkey",
        Some("Persistence"),
        "created a service-account key",
    ),
    ("putbucketpolicy", None, "changed a bucket policy"),
    ("putbucketacl", None, "changed a bucket's access list"),
    (
        "deletepublicaccessblock",
        None,
        "removed a bucket's public-access block",
    ),
    (
        "modifysnapshotattribute",
        Some("Exfiltration"),
        "shared a disk snapshot",
    ),
    (
        "modifyimageattribute",
        Some("Exfiltration"),
        "shared a machine image",
    ),
    (
        "authorizesecuritygroupingress",
        Some("Initial Access"),
        "opened a firewall rule",
    ),
];

fn risky_operation(case: &Case<'_>, cloud: &CloudSignal, out: &mut Vec<Judgement>) {
    let operation = cloud
        .operation
        .as_deref()
        .unwrap_or_default()
        .to_lowercase();
    let searched = format!("{operation}\n{}", case.text.replace(['.', ':'], ""));
    let Some((name, tactic, what)) = RISKY_OPERATIONS
        .iter()
        .find(|(name, _, _)| searched.contains(name))
    else {
        return;
    };
    let who = cloud
        .principal
        .clone()
        .unwrap_or_else(|| "an identity".to_string());
    let root = who.to_lowercase().contains("root") || case.mentions(ROOT_WORDS);
    let mut judgement = Judgement::new(
        Weight::Suspicious,
        format!("{who} {what}"),
        format!(
            "{who} {what} ({}){}. Attackers who hold a cloud credential do this to keep access, widen it or \
             hide their tracks; it needs a human to confirm it was a planned change.",
            cloud.operation.as_deref().unwrap_or(name),
            cloud.account.as_deref().map(|account| format!(" in account {account}")).unwrap_or_default()
        ),
    )
    .artifact(who.clone())
    .evidence("cloud_operation", json!({"operation": cloud.operation, "principal": cloud.principal, "account": cloud.account, "resource": cloud.resource}))
    .tag("cloud_iam_change", format!("{name} by {who}"))
    .remediation(format!("Confirm with the owner of {who} that the change was planned; if not, revert it and disable the credential"))
    .restates_claim();
    if let Some(tactic) = tactic {
        judgement = judgement.tactic(tactic);
    }
    if root {
        judgement = judgement
            .urgent("the root credential was used")
            .tag("root_usage", "root credential used");
    }
    out.push(judgement);
}

/// A command run inside a running container (`kubectl exec`, `docker exec`): how an
/// intruder with cluster access reaches the workload (ATT&CK T1609).
fn container_exec(case: &Case<'_>, cloud: &CloudSignal, out: &mut Vec<Judgement>) {
    let operation = cloud
        .operation
        .as_deref()
        .unwrap_or_default()
        .to_lowercase();
    let kubernetes = cloud.provider.as_deref() == Some("kubernetes")
        || cloud
            .resource_type
            .as_deref()
            .is_some_and(|kind| kind.contains("pod"));
    let exec = (kubernetes && operation.contains("exec")) || case.mentions(CONTAINER_EXEC_WORDS);
    if !exec {
        return;
    }
    let who = cloud
        .principal
        .clone()
        .unwrap_or_else(|| "an identity".to_string());
    let target = cloud
        .resource
        .clone()
        .unwrap_or_else(|| "a container".to_string());
    out.push(
        Judgement::new(
            Weight::Suspicious,
            format!("{who} ran a command inside {target}"),
            format!(
                "{who} opened a shell or ran a command inside the running container {target}. Operators do \
                 this to debug; intruders with cluster access do it to reach the workload and its secrets."
            ),
        )
        .artifact(target.clone())
        .evidence("container_exec", json!({"principal": cloud.principal, "resource": cloud.resource, "operation": cloud.operation}))
        .tactic("Execution")
        .tag("container_exec", target)
        .restates_claim()
        .question(who, "Did you exec into that container, and for what?"),
    );
}

fn cryptomining(case: &Case<'_>, out: &mut Vec<Judgement>) {
    if !case.mentions(CRYPTOMINING_WORDS) {
        return;
    }
    let host = case.host_phrase();
    out.push(
        Judgement::new(
            Weight::Malicious,
            "Cryptomining".to_string(),
            format!(
                "The alert shows cryptocurrency mining activity on {host}: nobody mines on company \
                 infrastructure by accident; someone who got in is spending the organisation's compute."
            ),
        )
        .evidence("behaviour", json!({"behaviour": "cryptomining"}))
        .tactic("Impact")
        .tag("cryptomining", host.clone())
        .remediation(format!("Stop {host}, snapshot it for forensics, and find the credential or exposure that let the miner in")),
    );
}

fn credential_exfiltration(case: &Case<'_>, out: &mut Vec<Judgement>) {
    if !case.mentions(INSTANCE_CREDENTIAL_WORDS) {
        return;
    }
    out.push(
        Judgement::new(
            Weight::Malicious,
            "Instance credentials used from outside".to_string(),
            "Temporary credentials that belong to a cloud instance were used from outside it: they were stolen \
             from the instance (metadata service, SSRF or a compromised workload)."
                .to_string(),
        )
        .evidence("behaviour", json!({"behaviour": "instance_credential_exfiltration"}))
        .tactic("Credential Access")
        .tag("credential_exfiltration", "instance credentials used outside")
        .urgent("instance credentials were stolen")
        .remediation("Revoke the role's active sessions, rotate it, and investigate the instance the credentials came from"),
    );
}

fn principal(case: &Case<'_>, cloud: &CloudSignal, out: &mut Vec<Judgement>) {
    let Some(principal) = cloud.principal.as_deref() else {
        return;
    };
    let Some(knowledge) = case.lookup(EntityKind::User, principal) else {
        return;
    };
    let Some(account) = knowledge.service_account else {
        return;
    };
    let caller_ip = case
        .signals
        .sign_in
        .as_ref()
        .and_then(|sign_in| sign_in.source_ip.clone())
        .or_else(|| {
            case.signals
                .network
                .as_ref()
                .and_then(|network| network.source_ip.clone())
        });
    let Some(ip) = caller_ip else {
        return;
    };
    if account.ips.is_empty() {
        return;
    }
    if Context::ip_in(&ip, &account.ips) {
        out.push(
            Judgement::new(
                Weight::Explains,
                format!("{} acted from its listed network", account.user),
                format!(
                    "The call came from {ip}, inside the addresses listed for {}.",
                    account.user
                ),
            )
            .artifact(principal)
            .evidence(
                "service_account_profile",
                json!({"account": account.user, "ip": ip, "ips": account.ips}),
            )
            .tag("service_account_expected", account.user.clone())
            .covers(Covers::Allowance(Context::behaviours(&account.behaviours))),
        );
    } else {
        out.push(
            Judgement::new(
                Weight::Malicious,
                format!("{} used from {ip}, outside its network", account.user),
                format!(
                    "The identity {} is only ever used from {}; this call came from {ip}. Its credential is in \
                     someone else's hands.",
                    account.user,
                    account.ips.join(", ")
                ),
            )
            .artifact(principal)
            .artifact(ip.clone())
            .evidence("service_account_profile", json!({"account": account.user, "ip": ip, "ips": account.ips}))
            .tactic("Credential Access")
            .tag("service_account_misuse", account.user.clone())
            .urgent("a service identity's credential is in someone else's hands")
            .remediation(format!("Revoke and rotate the credentials of {} and block {ip}", account.user)),
        );
    }
}

fn foreign_account(case: &Case<'_>, out: &mut Vec<Judgement>) {
    if case
        .context
        .document()
        .organization
        .cloud_accounts
        .is_empty()
    {
        return;
    }
    for (entity, knowledge) in case.known_of(EntityKind::CloudAccount) {
        if !knowledge.own_cloud_account {
            out.push(
                Judgement::new(
                    Weight::Suspicious,
                    format!("Account {} is not listed as the organisation's", entity.value),
                    format!(
                        "The cloud account {} is not among the organisation's listed accounts: either the context \
                         is out of date, or data or access is going to someone else's account.",
                        entity.value
                    ),
                )
                .artifact(entity.value.clone())
                .evidence("cloud_account", json!({"account": entity.value, "listed": false}))
                .tag("foreign_cloud_account", entity.value.clone()),
            );
        }
    }
}

fn exposure(case: &Case<'_>, cloud: &CloudSignal, out: &mut Vec<Judgement>) {
    let public = cloud.publicly_exposed == Some(true) || case.mentions(PUBLIC_EXPOSURE_WORDS);
    if !public {
        return;
    }
    let resource = cloud
        .resource
        .clone()
        .unwrap_or_else(|| "a resource".to_string());
    let critical = case.known.iter().any(|(_, knowledge)| {
        knowledge
            .cloud_resource
            .is_some_and(|listed| listed.critical)
    });
    let mut judgement = Judgement::new(
        Weight::Suspicious,
        format!("{resource} is exposed to the internet"),
        format!("{resource} is reachable from the internet{}.", if critical { ", and it is a critical resource" } else { "" }),
    )
    .artifact(resource.clone())
    .evidence("exposure", json!({"resource": resource, "critical": critical}))
    .tag("public_exposure", resource.clone())
    .restates_claim()
    .remediation(format!("Remove public access from {resource} unless it is meant to be public, and review its access logs"));
    if critical {
        judgement = judgement.urgent("a critical resource is exposed to the internet");
    }
    out.push(judgement);
}

/// Secret-scanning alerts: a credential found in code or a public place.
pub(crate) fn applies_to_secret(case: &Case<'_>) -> bool {
    case.signals.secret.is_some()
}

pub(crate) fn exposed_secret(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(secret) = &case.signals.secret else {
        return;
    };
    let SecretSignal {
        secret_type,
        location,
        publicly_exposed,
        still_valid,
        resolved,
    } = secret;
    let kind = secret_type.clone().unwrap_or_else(|| "secret".to_string());
    let place = location
        .clone()
        .unwrap_or_else(|| "a repository".to_string());
    let evidence = json!({"secret_type": secret_type, "location": location, "public": publicly_exposed, "valid": still_valid, "resolved": resolved});
    let (weight, headline, detail) = match (publicly_exposed, still_valid, resolved) {
        (_, _, Some(true)) => (
            Weight::Neutral,
            format!("The exposed {kind} was already dealt with"),
            format!(
                "A {kind} was found in {place}; the source reports the alert resolved (revoked or closed)."
            ),
        ),
        (Some(true), Some(false), _) => (
            Weight::Suspicious,
            format!("An invalid {kind} was published"),
            format!(
                "A {kind} was published in {place}, but the provider reports it no longer works; check it was not used while it did."
            ),
        ),
        // The provider says the secret no longer works and it was never public: no
        // exposure remains, whatever kind of secret it was (a vendor's own flag, weighed).
        (Some(false), Some(false), _) => (
            Weight::Explains,
            format!("The {kind} no longer works and was never public"),
            format!(
                "A {kind} was found in {place}, which is not public, and the provider reports it \
                 inactive: nobody outside could have seen it, and nobody can use it now."
            ),
        ),
        (Some(true), _, _) => (
            Weight::Malicious,
            format!("A working {kind} is public"),
            format!(
                "A {kind} is exposed publicly in {place}{}. Public secrets are harvested by bots within minutes: \
                 treat it as compromised.",
                if *still_valid == Some(true) {
                    " and the provider confirms it still works"
                } else {
                    ""
                }
            ),
        ),
        _ => (
            Weight::Suspicious,
            format!("A {kind} was committed to {place}"),
            format!(
                "A {kind} was found in {place}; it is not public, but everyone with access to the code has it."
            ),
        ),
    };
    let mut judgement = Judgement::new(weight, headline, detail)
        .artifact(place.clone())
        .evidence("exposed_secret", evidence)
        .tactic("Credential Access")
        .tag("exposed_secret", kind.clone())
        .restates_claim();
    if *resolved != Some(true) && weight != Weight::Explains {
        judgement = judgement
            .remediation(format!(
                "Revoke and rotate the {kind} now, then remove it from {place} and its history"
            ))
            .remediation(format!(
                "Review the provider's logs for any use of the {kind} since it was committed"
            ));
    }
    if *publicly_exposed == Some(true) && *resolved != Some(true) {
        judgement = judgement.urgent("a working secret is public");
    }
    out.push(judgement);
}
