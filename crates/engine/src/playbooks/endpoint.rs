//! Endpoint alerts: credential theft on the host (LSASS, DCSync, NTDS), ransomware,
//! malware the source identified, living-off-the-land execution, and whether an admin
//! tool or service account is doing what the operator sanctioned.

use serde_json::json;
use sleuth_domain::{AlertCategory, EntityKind, SeverityLevel, SourceVerdict};

use crate::behaviour::Behaviour;
use crate::case::Case;
use crate::context::{Context, file_name};
use crate::judgement::{Covers, Judgement, Weight};
use crate::vocabulary::{MALWARE_WORDS, REMOTE_ACCESS_TOOLS};

pub(crate) fn applies(case: &Case<'_>) -> bool {
    case.category() == Some(AlertCategory::Endpoint) || case.signals.process.is_some()
}

pub(crate) fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    identified_malware(case, out);
    remote_access_tool(case, out);
    living_off_the_land(case, out);
    admin_tools(case, out);
    vendor_updater(case, out);
    service_account_processes(case, out);
    missing_essentials(case, out);
}

fn identified_malware(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(word) = case.first_mention(MALWARE_WORDS) else {
        return;
    };
    let severe = case
        .signals
        .severity_level
        .is_some_and(|level| level >= SeverityLevel::High);
    let confident = case
        .signals
        .confidence
        .is_none_or(|confidence| confidence >= 70);
    let host = case.host_phrase();
    let source = &case.alert.direct_source_label;
    let weight = if severe && confident {
        Weight::Malicious
    } else {
        Weight::Suspicious
    };
    let mut judgement = Judgement::new(
        weight,
        format!("{source} identified malware ('{word}') on {host}"),
        format!(
            "{source} identified '{word}' on {host} at {} severity{}.{}",
            case.signals.severity_level.map_or("unstated", |level| level.as_str()),
            case.signals.confidence.map(|confidence| format!(" with confidence {confidence}")).unwrap_or_default(),
            if case.blocked() {
                " It reports the threat was blocked or quarantined; check the host for what ran before that."
            } else {
                " Nothing says it was stopped."
            }
        ),
    )
    .artifact(host.clone())
    .evidence(
        "source_detection",
        json!({"source": source, "matched": word, "severity": case.signals.severity_level, "blocked": case.blocked()}),
    )
    .tag("malware", word.to_string())
    .restates_claim();
    // Execution only when something ran (or tried to): a file flagged at rest names no
    // attacker tactic yet.
    if case.signals.process.is_some() {
        judgement = judgement.tactic("Execution");
    }
    judgement = if case.blocked() {
        judgement.remediation(format!(
            "Run a full scan of {host} and confirm the quarantined file did not execute"
        ))
    } else {
        judgement.remediation(format!(
            "Isolate {host} and collect a triage image before cleaning it"
        ))
    };
    for (entity, _) in case.known_of(EntityKind::HashSha256) {
        judgement =
            judgement.remediation(format!("Ban the hash {} across the fleet", entity.value));
    }
    out.push(judgement);
}

fn remote_access_tool(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(tool) = case.first_word(REMOTE_ACCESS_TOOLS) else {
        return;
    };
    let host = case.host_phrase();
    out.push(
        Judgement::new(
            Weight::Suspicious,
            format!("Remote-access tool '{tool}' on {host}"),
            format!(
                "'{tool}' runs on {host}. Remote-access tools give whoever holds the session full control \
                 of the machine; attackers install them because they look like IT support."
            ),
        )
        .artifact(host.clone())
        .evidence("remote_access_tool", json!({"tool": tool, "host": host}))
        .tactic("Command and Control")
        .tag("remote_access_tool", tool.to_string())
        .restates_claim()
        .question(
            case.person_phrase().unwrap_or_else(|| format!("the user of {host}")),
            format!("Did you install or accept a '{tool}' session, and who asked you to?"),
        ),
    );
}

/// Execution patterns attackers use with the system's own tools.
const LOLBIN_PATTERNS: &[(&str, &str, &str)] = &[
    (
        "-encodedcommand",
        "encoded_powershell",
        "PowerShell ran a base64-encoded command",
    ),
    (
        " -enc ",
        "encoded_powershell",
        "PowerShell ran a base64-encoded command",
    ),
    (
        "frombase64string",
        "encoded_powershell",
        "PowerShell decoded a base64 payload",
    ),
    (
        "downloadstring",
        "download_cradle",
        "a script was downloaded and run in memory",
    ),
    (
        "downloadfile",
        "download_cradle",
        "a file was downloaded by a script",
    ),
    (
        "invoke-webrequest",
        "download_cradle",
        "a script fetched content from the web",
    ),
    (
        "iwr ",
        "download_cradle",
        "a script fetched content from the web",
    ),
    (
        "iex ",
        "download_cradle",
        "downloaded content was executed in memory (IEX)",
    ),
    (
        "iex(",
        "download_cradle",
        "downloaded content was executed in memory (IEX)",
    ),
    (
        "certutil -urlcache",
        "lolbin_download",
        "certutil was used to download a file",
    ),
    (
        "certutil.exe -urlcache",
        "lolbin_download",
        "certutil was used to download a file",
    ),
    (
        "certutil -decode",
        "lolbin_download",
        "certutil decoded a payload",
    ),
    (
        "bitsadmin /transfer",
        "lolbin_download",
        "BITS was used to download a file",
    ),
    ("mshta http", "lolbin_execution", "mshta ran a remote HTA"),
    (
        "mshta.exe http",
        "lolbin_execution",
        "mshta ran a remote HTA",
    ),
    (
        "regsvr32 /s /n /u /i:http",
        "lolbin_execution",
        "regsvr32 loaded a remote scriptlet (Squiblydoo)",
    ),
    (
        "/i:http",
        "lolbin_execution",
        "a remote scriptlet was loaded",
    ),
    (
        "rundll32 javascript",
        "lolbin_execution",
        "rundll32 ran JavaScript",
    ),
    (
        "wmic process call create",
        "lolbin_execution",
        "WMI created a process",
    ),
    (
        "curl http",
        "download_cradle",
        "a file was fetched with curl",
    ),
    (
        "wget http",
        "download_cradle",
        "a file was fetched with wget",
    ),
    (
        "| sh",
        "download_cradle",
        "downloaded content was piped to a shell",
    ),
    (
        "| bash",
        "download_cradle",
        "downloaded content was piped to a shell",
    ),
];

const OFFICE_PARENTS: &[&str] = &[
    "winword", "excel", "powerpnt", "outlook", "onenote", "msaccess",
];
const SHELLS: &[&str] = &[
    "cmd.exe",
    "powershell",
    "pwsh",
    "wscript",
    "cscript",
    "mshta",
    "rundll32",
    "regsvr32",
];

fn living_off_the_land(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(process) = &case.signals.process else {
        return;
    };
    let lowered = |lines: &[&Option<String>]| {
        format!(
            " {} ",
            lines
                .iter()
                .copied()
                .flatten()
                .map(|line| line.to_lowercase())
                .collect::<Vec<_>>()
                .join(" ")
        )
    };
    // What an encoded command hides is judged first, like plain text: the download inside
    // says more than "it was encoded".
    let decoded = lowered(&[&process.decoded_command]);
    let command = lowered(&[&process.command_line, &process.parent_command_line]);
    let host = case.host_phrase();
    let found = LOLBIN_PATTERNS
        .iter()
        .find(|(pattern, _, _)| decoded.contains(pattern))
        .map(|found| (found, "in the decoded command line"))
        .or_else(|| {
            LOLBIN_PATTERNS
                .iter()
                .find(|(pattern, _, _)| command.contains(pattern))
                .map(|found| (found, "in the command line"))
        });
    if let Some(((pattern, tag, what), where_found)) = found {
        out.push(
            Judgement::new(
                Weight::Suspicious,
                format!("Suspicious execution on {host}: {what}"),
                format!(
                    "On {host}, {what} ('{}' {where_found}). Attackers use the system's own tools \
                     this way to avoid dropping files; admins rarely do.",
                    pattern.trim()
                ),
            )
            .artifact(host.clone())
            .evidence("command_line", json!({"pattern": pattern.trim(), "command_line": process.command_line, "decoded_command": process.decoded_command}))
            .tactic("Execution")
            .tag(tag, what.to_string())
            .remediation(format!("Review what the command on {host} downloaded or ran and who started it")),
        );
    }
    let parent = process
        .parent_name
        .as_deref()
        .unwrap_or_default()
        .to_lowercase();
    let child = process.name.as_deref().unwrap_or_default().to_lowercase();
    if OFFICE_PARENTS.iter().any(|office| parent.contains(office))
        && SHELLS
            .iter()
            .any(|shell| child.contains(shell.trim_end_matches(".exe")))
    {
        let mut judgement = Judgement::new(
            Weight::Suspicious,
            format!("An Office application started {child} on {host}"),
            format!(
                "{parent} started {child} on {host}: documents do not start shells, macros and exploits do."
            ),
        )
        .artifact(host.clone())
        .evidence("process_tree", json!({"parent": parent, "child": child}))
        .tactic("Initial Access")
        .tag("office_spawned_shell", format!("{parent} -> {child}"));
        if let Some(person) = case.person_phrase() {
            judgement = judgement.question(
                person,
                "Did you open an attachment or enable macros in a document just before this?",
            );
        }
        out.push(judgement);
    }
}

/// A software vendor's own updater, signed by that vendor, running from and writing to that
/// vendor's own product: the code signature the source reports names who made the program,
/// and an updater replacing its maker's application is what updaters do. It explains that
/// code ran (and an unnamed detection about it), never malware, persistence or what the
/// program was used for; and not when the source blocked it or judged it malicious.
fn vendor_updater(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(process) = &case.signals.process else {
        return;
    };
    let Some(signer) = process.signer.as_deref() else {
        return;
    };
    if case.blocked() || case.signals.source_verdict == Some(SourceVerdict::Malicious) {
        return;
    }
    let Some(vendor) = vendor_word(signer) else {
        return;
    };
    let program = process
        .path
        .as_deref()
        .or(process.name.as_deref())
        .unwrap_or_default()
        .to_lowercase();
    let updater = ["update", "install"]
        .iter()
        .any(|word| file_name(&program).contains(word));
    // The files it worked on; the program that started it (launchd, the Task Scheduler)
    // is not among them.
    let parent = process.parent_name.as_deref().map(str::to_lowercase);
    let vendors_files = case
        .alert
        .entities_of(EntityKind::FilePath)
        .map(str::to_lowercase)
        .filter(|path| parent.as_deref() != Some(file_name(path)))
        .all(|path| path.contains(&vendor));
    if !updater || !program.contains(&vendor) || !vendors_files {
        return;
    }
    let name = process.name.as_deref().unwrap_or(file_name(&program));
    out.push(
        Judgement::new(
            Weight::Explains,
            format!("{name} is {}'s signed updater", publisher(signer)),
            format!(
                "{name} is an updater signed by {} ('{signer}'), running from that vendor's own \
                 folder, and every file the alert names is that vendor's: a vendor's updater \
                 replacing its own application. This explains that the program ran, not what \
                 else it might have been used for.",
                publisher(signer)
            ),
        )
        .artifact(program.clone())
        .evidence(
            "code_signature",
            json!({"process": program, "signer": signer, "vendor": vendor, "updater": true}),
        )
        .tag("vendor_updater", publisher(signer).to_string())
        .covers(Covers::Behaviours(UPDATER_CLAIMS)),
    );
}

/// What a vendor's signed updater explains: that code ran, or a detection that names no
/// behaviour. Never malware (a signed update can be trojanised), persistence or anything
/// high-harm (only an allowance naming it explains that).
const UPDATER_CLAIMS: &[Behaviour] = &[Behaviour::Execution, Behaviour::Other];

/// The organisation a code signature names: "Developer ID Application: Microsoft
/// Corporation (UBF8T346G9)" (Apple) is Microsoft Corporation; "Google LLC" (Windows) is
/// itself.
fn publisher(signer: &str) -> &str {
    let signer = signer.trim();
    let organisation = signer
        .strip_prefix("Developer ID Application:")
        .unwrap_or(signer);
    organisation
        .split(" (")
        .next()
        .unwrap_or(organisation)
        .trim()
}

/// The word a vendor's products carry in their paths: the first word of the signing
/// organisation, lower-cased ("microsoft", "google"). None when that word names a kind of
/// certificate rather than a vendor ("Software Signing", Apple's platform binaries).
fn vendor_word(signer: &str) -> Option<String> {
    const GENERIC: &[&str] = &["software", "signing", "developer", "code", "certificate"];
    let word = publisher(signer)
        .split(|character: char| !character.is_alphanumeric())
        .find(|word| !word.is_empty())?
        .to_lowercase();
    (word.chars().count() >= 4 && !GENERIC.contains(&word.as_str())).then_some(word)
}

fn admin_tools(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(process) = &case.signals.process else {
        return;
    };
    let candidates = [&process.name, &process.parent_name, &process.path]
        .into_iter()
        .flatten();
    let Some(tool) = candidates
        .filter_map(|name| case.context.admin_tool(name))
        .next()
    else {
        return;
    };
    let users: &[&str] = case.people();
    let user_allowed =
        tool.users.is_empty() || users.iter().any(|user| Context::user_in(user, &tool.users));
    let places: Vec<String> = case
        .known
        .iter()
        .filter_map(|(entity, knowledge)| match entity.kind {
            EntityKind::Host => Some(entity.value.clone()),
            EntityKind::Ip => knowledge.asset.map(|asset| asset.host.clone()),
            _ => None,
        })
        .collect();
    let host_allowed = tool.hosts.is_empty()
        || places
            .iter()
            .any(|place| Context::host_in(place, &tool.hosts));
    let evidence = json!({
        "tool": tool.name,
        "users_seen": users,
        "hosts_seen": places,
        "allowed_users": tool.users,
        "allowed_hosts": tool.hosts,
    });
    if user_allowed && host_allowed {
        out.push(
            Judgement::new(
                Weight::Explains,
                format!("Sanctioned use of {}", tool.name),
                format!(
                    "{} is a sanctioned admin tool, used here by {} from {}, as the operator allows.",
                    tool.name,
                    if users.is_empty() { "an allowed user".to_string() } else { users.join(", ") },
                    if places.is_empty() { "an allowed host".to_string() } else { places.join(", ") }
                ),
            )
            .evidence("sanctioned_admin_tool", evidence)
            .tag("sanctioned_admin_tool", tool.name.clone())
            .covers(Covers::Allowance(Context::behaviours(&tool.behaviours))),
        );
    } else {
        let why = if user_allowed {
            format!(
                "from {}, which is not among its allowed hosts ({})",
                places.join(", "),
                tool.hosts.join(", ")
            )
        } else {
            format!(
                "by {}, who is not among its allowed users ({})",
                if users.is_empty() {
                    "an unknown user".to_string()
                } else {
                    users.join(", ")
                },
                tool.users.join(", ")
            )
        };
        out.push(
            Judgement::new(
                Weight::Suspicious,
                format!("{} used outside its sanction", tool.name),
                format!(
                    "{} ({}) is an admin tool the operator sanctions only for some people and hosts; it ran \
                     here {why}. Attackers use the same tools to move laterally.",
                    tool.name,
                    file_name(process.name.as_deref().unwrap_or_default())
                ),
            )
            .evidence("admin_tool_misuse", evidence)
            .tactic("Lateral Movement")
            .tag("admin_tool_misuse", tool.name.clone())
            .remediation(format!("Confirm with the owner of {} whether this use of {} was theirs", case.host_phrase(), tool.name)),
        );
    }
}

fn service_account_processes(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some(process) = &case.signals.process else {
        return;
    };
    for (entity, knowledge) in case.known_of(EntityKind::User) {
        let Some(account) = knowledge.service_account else {
            continue;
        };
        let name = process.name.as_deref().map(file_name).unwrap_or_default();
        // An allowance covers only what it names: an empty process list names no process,
        // so it neither sanctions this one nor says it is out of place.
        let process_named = account
            .processes
            .iter()
            .any(|expected| expected.eq_ignore_ascii_case(name));
        let hosts = case.hosts();
        let host_expected = account.hosts.is_empty()
            || hosts
                .iter()
                .any(|host| Context::host_in(host, &account.hosts));
        if account.processes.is_empty() && host_expected {
            continue;
        }
        let process_expected = process_named || account.processes.is_empty();
        let evidence = json!({
            "account": account.user,
            "process": name,
            "hosts": hosts,
            "expected_processes": account.processes,
            "expected_hosts": account.hosts,
        });
        if process_expected && host_expected {
            out.push(
                Judgement::new(
                    Weight::Explains,
                    format!("{} is doing its listed job", account.user),
                    format!(
                        "The service account {} ran {name} on {}, which is what the operator lists it for{}.",
                        account.user,
                        hosts.join(", "),
                        account.description.as_deref().map(|description| format!(" ({description})")).unwrap_or_default()
                    ),
                )
                .artifact(entity.value.clone())
                .evidence("service_account_profile", evidence)
                .tag("service_account_expected", account.user.clone())
                .covers(Covers::Allowance(Context::behaviours(&account.behaviours))),
            );
        } else {
            out.push(
                Judgement::new(
                    Weight::Malicious,
                    format!("Service account {} acting outside its profile", account.user),
                    format!(
                        "The service account {} ran {name} on {}; it is listed only for {} on {}. A service \
                         account doing something new is a strong sign its credential was stolen.",
                        account.user,
                        if hosts.is_empty() { "an unlisted host".to_string() } else { hosts.join(", ") },
                        if account.processes.is_empty() { "any process".to_string() } else { account.processes.join(", ") },
                        if account.hosts.is_empty() { "any host".to_string() } else { account.hosts.join(", ") },
                    ),
                )
                .artifact(entity.value.clone())
                .evidence("service_account_profile", evidence)
                .tactic("Credential Access")
                .tag("service_account_misuse", account.user.clone())
                .remediation(format!("Rotate the credential of {} and review everything it did in the last 30 days", account.user)),
            );
        }
    }
}

fn missing_essentials(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let has_host = case
        .known
        .iter()
        .any(|(entity, _)| matches!(entity.kind, EntityKind::Host | EntityKind::Ip));
    let has_what = case.signals.process.is_some()
        || case.known.iter().any(|(entity, _)| {
            matches!(
                entity.kind,
                EntityKind::Process
                    | EntityKind::FilePath
                    | EntityKind::HashMd5
                    | EntityKind::HashSha1
                    | EntityKind::HashSha256
            )
        });
    if !has_host && !has_what {
        out.push(Judgement::new(
            Weight::Missing,
            "No host and no process or file",
            "The endpoint alert names neither the host nor the process or file involved, so there is \
             nothing to check it against. Send the host name and the process details with the alert.",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_names_its_vendor_only_when_it_names_an_organisation() {
        for (signer, vendor) in [
            (
                "Developer ID Application: Microsoft Corporation (UBF8T346G9)",
                Some("microsoft"),
            ),
            ("Google LLC", Some("google")),
            ("Zoom Video Communications, Inc.", Some("zoom")),
            // Apple's platform binaries: a kind of certificate, not a vendor to match.
            ("Software Signing", None),
            ("Developer ID Application: HP (A1B2C3D4E5)", None),
        ] {
            assert_eq!(vendor_word(signer).as_deref(), vendor, "{signer}");
        }
    }
}
