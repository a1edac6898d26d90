//! Behaviours any alert may describe, whatever tool raised it: credential theft (LSASS,
//! DCSync, NTDS, Kerberos abuse, keychains and shadow files) and ransomware. An EDR, a
//! SIEM rule or an identity product may each report the same DCSync; the words and the
//! ATT&CK technique ids say what it is.

use serde_json::json;

use crate::case::Case;
use crate::claim::has_technique;
use crate::judgement::{Judgement, Weight};
use crate::vocabulary::{
    CREDENTIAL_STORE_WORDS, DCSYNC_WORDS, KERBEROS_WORDS, LSASS, LSASS_DUMPERS, LSASS_TOOLS,
    NTDS_WORDS, RANSOMWARE_WORDS, REVERSE_SHELL_WORDS,
};

pub(crate) fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    credential_access(case, out);
    reverse_shell(case, out);
    ransomware(case, out);
}

fn credential_access(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let host = case.host_phrase();
    let people = case.people();
    let (headline, what, tag) = if (case.mentions(LSASS)
        && case.first_mention(LSASS_TOOLS).is_some())
        || case.mentions(LSASS_DUMPERS)
        || has_technique(case, &["T1003.001"])
    {
        let tool = case.first_mention(LSASS_TOOLS).unwrap_or("a dumping tool");
        (
            format!("LSASS memory was read on {host}"),
            format!(
                "The credentials cached in LSASS on {host} were read with {tool}: every account that \
                 signed in to {host} since its last reboot must be treated as stolen."
            ),
            "credential_dumping",
        )
    } else if case.mentions(DCSYNC_WORDS) || has_technique(case, &["T1003.006"]) {
        (
            "DCSync: domain replication requested by a non-DC".to_string(),
            "Directory replication (DRSUAPI GetNCChanges) was requested the way DCSync does it: the \
             requester obtains every password hash of the domain, krbtgt included."
                .to_string(),
            "dcsync",
        )
    } else if case.mentions(NTDS_WORDS) || has_technique(case, &["T1003.003"]) {
        (
            format!("The AD database (NTDS.dit) was copied on {host}"),
            format!(
                "NTDS.dit, which holds every domain password hash, was accessed or copied on {host}."
            ),
            "ntds_theft",
        )
    } else if let Some(store) = case
        .first_mention(CREDENTIAL_STORE_WORDS)
        .or_else(|| has_technique(case, &["T1555", "T1003.008"]).then_some("a credential store"))
    {
        (
            format!("A credential store was dumped on {host}"),
            format!(
                "Saved credentials on {host} were read out ('{store}'): keychain, shadow-file or browser \
                 passwords give whoever holds them the user's other accounts."
            ),
            "credential_store_dump",
        )
    } else if case.mentions(KERBEROS_WORDS) || has_technique(case, &["T1558"]) {
        (
            "Kerberos ticket abuse".to_string(),
            "Kerberos tickets were requested or forged the way Kerberoasting or ticket forging does, to \
             crack or impersonate service and user accounts."
                .to_string(),
            "kerberos_abuse",
        )
    } else {
        return;
    };
    let mut judgement = Judgement::new(Weight::Malicious, headline, what)
        .evidence("behaviour", json!({"behaviour": tag, "host": case.hosts().first(), "command_line": command_line(case)}))
        .tactic("Credential Access")
        .tag("credential_dumping", tag)
        .remediation(format!("Isolate {host} from the network"))
        .remediation(format!(
            "Reset the passwords of every account that signed in to {host}{} and revoke their sessions",
            if people.is_empty() { String::new() } else { format!(" ({})", people.join(", ")) }
        ));
    if tag == "dcsync" || tag == "ntds_theft" {
        judgement = judgement
            .urgent("the whole domain's credentials are at stake")
            .remediation("Reset the krbtgt account's password twice, hours apart, and rotate every privileged account");
    }
    for host in case.hosts() {
        judgement = judgement.artifact(*host);
    }
    out.push(judgement);
}

/// Techniques ransomware uses: encrypting data, and destroying the means of recovery.
const RANSOMWARE_TECHNIQUES: &[&str] = &["T1486", "T1490"];

fn ransomware(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(word) = case.first_mention(RANSOMWARE_WORDS).or_else(|| {
        has_technique(case, RANSOMWARE_TECHNIQUES)
            .then_some("data encrypted or recovery inhibited (ATT&CK)")
    }) else {
        return;
    };
    let host = case.host_phrase();
    out.push(
        Judgement::new(
            Weight::Malicious,
            format!("Ransomware behaviour on {host}"),
            format!(
                "The alert shows ransomware behaviour ('{word}'): deleting recovery points or encrypting \
                 files is what ransomware does just before or while it encrypts."
            ),
        )
        .artifact(host.clone())
        .evidence("behaviour", json!({"behaviour": "ransomware", "matched": word, "command_line": command_line(case)}))
        .tactic("Impact")
        .tag("ransomware", word.to_string())
        .urgent("ransomware is at work")
        .remediation(format!("Isolate {host} now and check every host it can reach for the same activity"))
        .remediation("Confirm offline backups are intact before any restore"),
    );
}

/// A shell handed to a remote host: whoever holds the other end types on this machine.
/// Malicious in itself: nobody administers a host by redirecting a shell to the internet.
fn reverse_shell(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(word) = case.first_mention(REVERSE_SHELL_WORDS) else {
        return;
    };
    let host = case.host_phrase();
    let remote = case
        .signals
        .network
        .as_ref()
        .and_then(|network| network.destination_ip.clone())
        .or_else(|| {
            case.known_of(sleuth_domain::EntityKind::Ip)
                .find(|(_, knowledge)| knowledge.place.is_some_and(|place| !place.is_own()))
                .map(|(entity, _)| entity.value.clone())
        });
    let to = remote
        .as_deref()
        .map(|ip| format!(" to {ip}"))
        .unwrap_or_default();
    let mut judgement = Judgement::new(
        Weight::Malicious,
        format!("Reverse shell from {host}{to}"),
        format!(
            "A shell on {host} was handed to a remote host{to} ('{word}'): whoever holds the other \
             end runs commands on {host}. Administrators do not work this way; intruders do."
        ),
    )
    .artifact(host.clone())
    .evidence(
        "behaviour",
        json!({"behaviour": "reverse_shell", "matched": word, "remote": remote, "command_line": command_line(case)}),
    )
    .tactic("Execution")
    .tag("reverse_shell", word.to_string())
    .remediation(format!(
        "Isolate {host}, kill the shell and find how the command got there (the parent process and what it served)"
    ));
    if let Some(remote) = &remote {
        judgement = judgement.artifact(remote.clone()).remediation(format!(
            "Block {remote} at the perimeter and search for other hosts that reached it"
        ));
    }
    out.push(judgement);
}

/// The command line of the alert's process, for evidence.
fn command_line(case: &Case<'_>) -> Option<String> {
    case.signals
        .process
        .as_ref()
        .and_then(|process| process.command_line.clone())
}
