//! Identity alerts: suspicious sign-ins (new country, impossible travel, Tor, MFA fatigue
//! or reset, leaked credentials), service accounts signing in where they never do, and
//! password spray or brute force.

use serde_json::json;
use sleuth_domain::{AlertCategory, EntityKind, SignInSignal};

use crate::case::Case;
use crate::context::{Context, Identity, NetworkPlace};

use crate::judgement::{Covers, Judgement, Weight};
use crate::vocabulary::{
    BRUTE_FORCE_WORDS, IMPOSSIBLE_TRAVEL_WORDS, INTERACTIVE_LOGON_WORDS, LEAKED_CREDENTIAL_WORDS,
    MFA_FATIGUE_WORDS, MFA_RESET_WORDS, PASSWORD_SPRAY_WORDS,
};

pub(crate) fn applies(case: &Case<'_>) -> bool {
    case.category() == Some(AlertCategory::Identity) || case.signals.sign_in.is_some()
}

pub(crate) fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let empty = SignInSignal::default();
    let sign_in = case.signals.sign_in.as_ref().unwrap_or(&empty);
    let user = sign_in
        .user
        .clone()
        .or_else(|| case.person_phrase())
        .unwrap_or_else(|| "the account".to_string());
    source_address(case, sign_in, &user, out);
    location(case, sign_in, &user, out);
    mfa(case, sign_in, &user, out);
    risk_reasons(case, sign_in, &user, out);
    service_account_sign_in(case, sign_in, out);
    guessing(case, sign_in, &user, out);
    outcome(case, sign_in, &user, out);
    if !case
        .known
        .iter()
        .any(|(entity, _)| matches!(entity.kind, EntityKind::User | EntityKind::Email))
    {
        out.push(Judgement::new(
            Weight::Missing,
            "No account named",
            "The identity alert does not say which account signed in or was targeted, so its history, \
             role and usual locations cannot be checked. Send the user principal name with the alert.",
        ));
    }
}

fn source_address(case: &Case<'_>, sign_in: &SignInSignal, user: &str, out: &mut Vec<Judgement>) {
    let Some(ip) = sign_in.source_ip.as_deref() else {
        return;
    };
    let Some(knowledge) = case.lookup(EntityKind::Ip, ip) else {
        return;
    };
    let place = match knowledge.place {
        Some(NetworkPlace::VpnEgress) => "the corporate VPN egress",
        Some(NetworkPlace::OfficeNat) => "an office's public address",
        Some(NetworkPlace::OwnPublic) => "one of the organisation's own public addresses",
        Some(NetworkPlace::Internal) => "the internal network",
        _ => return,
    };
    out.push(
        Judgement::new(
            Weight::Reassures,
            format!("Signed in from {place}"),
            format!(
                "{user} signed in from {ip}, {place}. Reaching it already took the organisation's own \
                 authentication, so the sign-in's location is expected."
            ),
        )
        .artifact(ip)
        .evidence("network_place", json!({"ip": ip, "place": place}))
        .tag("corporate_network", format!("{ip}: {place}"))
        .covers(Covers::Location),
    );
}

fn location(case: &Case<'_>, sign_in: &SignInSignal, user: &str, out: &mut Vec<Judgement>) {
    if case.mentions(IMPOSSIBLE_TRAVEL_WORDS) {
        // A VPN makes a user appear where its egress is: "travel" between the user's real
        // location and the corporate VPN is an artefact. An office address is a real place.
        let via_vpn = case
            .known_of(EntityKind::Ip)
            .find(|(_, knowledge)| knowledge.place == Some(NetworkPlace::VpnEgress))
            .map(|(entity, _)| entity.value.clone());
        let judgement = match via_vpn {
            Some(vpn) => Judgement::new(
                Weight::Explains,
                "The 'travel' is the corporate VPN",
                format!(
                    "One end of the impossible travel for {user} is {vpn}, the corporate VPN egress: the \
                     VPN made the user appear there, so the two places were never both physical."
                ),
            )
            .artifact(vpn.clone())
            .evidence("network_place", json!({"ip": vpn, "place": "vpn_egress"}))
            .tag("corporate_network", format!("{vpn}: VPN egress"))
            .covers(Covers::Location),
            None => Judgement::new(
                Weight::Suspicious,
                format!("Impossible travel for {user}"),
                format!(
                    "{user} signed in from places too far apart for the time between them{}; one of the two \
                     sessions is probably someone else's.",
                    sign_in.country.as_deref().map(|country| format!(" (the latest from {country})")).unwrap_or_default()
                ),
            )
            .evidence("sign_in_location", json!({"country": sign_in.country, "city": sign_in.city, "ip": sign_in.source_ip}))
            .tactic("Initial Access")
            .tag("impossible_travel", user.to_string())
            .restates_claim()
            .question(user, "Were you travelling, or using a VPN or a cloud service that signs in for you, at that time?"),
        };
        out.push(judgement.artifact(user));
    }
    let Some(country) = sign_in.country.as_deref() else {
        return;
    };
    let home = signing_in(case, sign_in).and_then(|identity| identity.location.clone());
    let usual_for_organisation = || {
        case.context
            .document()
            .organization
            .usual_countries
            .iter()
            .any(|usual| same_country(usual, country))
    };
    // Unusual: not where the person works (when known) and not where the organisation
    // works; a British CFO signing in from the US office's country is not news.
    let unusual = match &home {
        Some(home) => !same_country(home, country) && !usual_for_organisation(),
        None => {
            !case
                .context
                .document()
                .organization
                .usual_countries
                .is_empty()
                && !usual_for_organisation()
        }
    };
    if !unusual {
        return;
    }
    let expected = home.clone().unwrap_or_else(|| {
        case.context
            .document()
            .organization
            .usual_countries
            .join(", ")
    });
    out.push(
        Judgement::new(
            Weight::Suspicious,
            format!("Sign-in from {country}, unusual for {user}"),
            format!(
                "{user} signed in from {country}{}; {} from {expected}.",
                sign_in.city.as_deref().map(|city| format!(" ({city})")).unwrap_or_default(),
                if home.is_some() { "they work" } else { "the organisation works" }
            ),
        )
        .artifact(user)
        .evidence(
            "sign_in_location",
            json!({"country": country, "city": sign_in.city, "expected": expected, "ip": sign_in.source_ip}),
        )
        .tactic("Initial Access")
        .tag("new_country", format!("{user} from {country}"))
        .restates_claim()
        .question(user, format!("Did you sign in from {country} at that time?")),
    );
}

/// The known person who signed in: the identity of the sign-in's own account when the
/// alert says which it is (another person the alert names, an admin or a target, works
/// elsewhere and says nothing about where this one does), else the one identity the alert
/// names. Two identities and no account: nobody, rather than a guess.
fn signing_in<'c>(case: &Case<'c>, sign_in: &SignInSignal) -> Option<&'c Identity> {
    if let Some(account) = sign_in.user.as_deref() {
        let kind = if account.contains('@') {
            EntityKind::Email
        } else {
            EntityKind::User
        };
        return case
            .lookup(kind, account)
            .or_else(|| case.lookup(EntityKind::User, account))
            .and_then(|knowledge| knowledge.identity);
    }
    let mut named = case
        .known
        .iter()
        .filter(|(entity, _)| !case.is_handler(entity))
        .filter_map(|(_, knowledge)| knowledge.identity);
    let first = named.next()?;
    named
        .all(|other| std::ptr::eq(other, first))
        .then_some(first)
}

/// Whether two countries are the same, each written as an ISO code or an English name.
fn same_country(left: &str, right: &str) -> bool {
    let code = |text: &str| {
        let trimmed = text.trim();
        COUNTRY_NAMES
            .iter()
            .find(|(_, name)| name.eq_ignore_ascii_case(trimmed))
            .map_or_else(
                || trimmed.to_ascii_uppercase(),
                |(code, _)| (*code).to_string(),
            )
    };
    code(left) == code(right)
}

/// English names tools write instead of ISO 3166 codes, for the countries seen most.
const COUNTRY_NAMES: &[(&str, &str)] = &[
    ("GB", "United Kingdom"),
    ("GB", "UK"),
    ("GB", "Great Britain"),
    ("GB", "England"),
    ("US", "United States"),
    ("US", "USA"),
    ("US", "United States of America"),
    ("CA", "Canada"),
    ("MX", "Mexico"),
    ("BR", "Brazil"),
    ("AR", "Argentina"),
    ("IE", "Ireland"),
    ("FR", "France"),
    ("DE", "Germany"),
    ("NL", "Netherlands"),
    ("BE", "Belgium"),
    ("ES", "Spain"),
    ("PT", "Portugal"),
    ("IT", "Italy"),
    ("CH", "Switzerland"),
    ("AT", "Austria"),
    ("SE", "Sweden"),
    ("NO", "Norway"),
    ("DK", "Denmark"),
    ("FI", "Finland"),
    ("PL", "Poland"),
    ("CZ", "Czechia"),
    ("RO", "Romania"),
    ("UA", "Ukraine"),
    ("RU", "Russia"),
    ("RU", "Russian Federation"),
    ("TR", "Turkey"),
    ("IL", "Israel"),
    ("AE", "United Arab Emirates"),
    ("SA", "Saudi Arabia"),
    ("IR", "Iran"),
    ("IN", "India"),
    ("PK", "Pakistan"),
    ("CN", "China"),
    ("HK", "Hong Kong"),
    ("JP", "Japan"),
    ("KR", "South Korea"),
    ("KP", "North Korea"),
    ("SG", "Singapore"),
    ("VN", "Vietnam"),
    ("ID", "Indonesia"),
    ("PH", "Philippines"),
    ("AU", "Australia"),
    ("NZ", "New Zealand"),
    ("ZA", "South Africa"),
    ("NG", "Nigeria"),
    ("KE", "Kenya"),
    ("EG", "Egypt"),
    ("MA", "Morocco"),
];

fn mfa(case: &Case<'_>, sign_in: &SignInSignal, user: &str, out: &mut Vec<Judgement>) {
    let denials = sign_in.mfa_denials.unwrap_or(0);
    let fatigue_words = case.mentions(MFA_FATIGUE_WORDS);
    if denials >= 3 || fatigue_words {
        let approved = sign_in.mfa_passed == Some(true) || sign_in.succeeded == Some(true);
        let (weight, ending) = if approved {
            (
                Weight::Malicious,
                "and then one was approved: the attacker holds the password and now a session",
            )
        } else {
            (
                Weight::Suspicious,
                "none was approved, but the attacker holds the password",
            )
        };
        out.push(
            Judgement::new(
                weight,
                format!("MFA fatigue against {user}"),
                format!(
                    "{user} received {} MFA prompts they did not expect, {ending}.",
                    if denials > 0 { denials.to_string() } else { "repeated".to_string() }
                ),
            )
            .artifact(user)
            .evidence("mfa", json!({"denials": denials, "approved": approved}))
            .tactic("Credential Access")
            .tag("mfa_fatigue", format!("{denials} prompts"))
            .remediation(format!("Reset the password of {user}, revoke all sessions and re-register MFA with number matching"))
            .question(user, "Did you approve an MFA prompt you did not start?"),
        );
    }
    if case.mentions(MFA_RESET_WORDS) {
        out.push(
            Judgement::new(
                Weight::Suspicious,
                format!("MFA was removed or reset for {user}"),
                format!(
                    "An MFA factor of {user} was removed or reset. Attackers who phish a session do this to \
                     enrol their own device."
                ),
            )
            .artifact(user)
            .evidence("mfa", json!({"change": "factor removed or reset"}))
            .tactic("Persistence")
            .tag("mfa_change", user.to_string())
            .restates_claim()
            .question(user, "Did you ask the help desk to reset your MFA, or change it yourself?"),
        );
    }
}

fn risk_reasons(case: &Case<'_>, sign_in: &SignInSignal, user: &str, out: &mut Vec<Judgement>) {
    let reasons: Vec<String> = sign_in
        .risk_reasons
        .iter()
        .map(|reason| reason.to_lowercase())
        .collect();
    let has = |words: &[&str]| {
        reasons
            .iter()
            .any(|reason| words.iter().any(|word| reason.contains(word)))
    };
    if has(&["anonymizedip", "anonymous", "tor"])
        || sign_in
            .network_owner
            .as_deref()
            .is_some_and(|owner| owner.to_lowercase().contains("tor"))
    {
        out.push(
            Judgement::new(
                Weight::Suspicious,
                format!("{user} signed in through an anonymiser"),
                format!(
                    "The sign-in of {user} came through Tor or an anonymising proxy{}. Staff rarely need one; \
                     attackers with stolen passwords nearly always do.",
                    sign_in.source_ip.as_deref().map(|ip| format!(" ({ip})")).unwrap_or_default()
                ),
            )
            .artifact(user)
            .evidence("sign_in_risk", json!({"reasons": sign_in.risk_reasons, "network_owner": sign_in.network_owner}))
            .tactic("Initial Access")
            .tag("anonymizer", user.to_string())
            .restates_claim(),
        );
    }
    if has(&["leakedcredentials", "leaked credential", "leaked password"])
        || case.mentions(LEAKED_CREDENTIAL_WORDS)
    {
        out.push(
            Judgement::new(
                Weight::Suspicious,
                format!("Credentials of {user} were leaked"),
                format!(
                    "The password of {user} was found in a leak; anyone holding it can try it."
                ),
            )
            .artifact(user)
            .evidence("sign_in_risk", json!({"reasons": sign_in.risk_reasons}))
            .tactic("Credential Access")
            .tag("leaked_credentials", user.to_string())
            .restates_claim()
            .remediation(format!(
                "Force a password change for {user} and check their recent sign-ins"
            )),
        );
    }
}

fn service_account_sign_in(case: &Case<'_>, sign_in: &SignInSignal, out: &mut Vec<Judgement>) {
    for (entity, knowledge) in case.known_of(EntityKind::User) {
        let Some(account) = knowledge.service_account else {
            continue;
        };
        let interactive = sign_in.user_agent.as_deref().is_some_and(|agent| {
            let agent = agent.to_lowercase();
            ["mozilla", "chrome", "safari", "edge", "firefox"]
                .iter()
                .any(|browser| agent.contains(browser))
        }) || case.mentions(INTERACTIVE_LOGON_WORDS);
        let from_unlisted = sign_in
            .source_ip
            .as_deref()
            .is_some_and(|ip| !account.ips.is_empty() && !Context::ip_in(ip, &account.ips));
        let problem = if interactive && !account.interactive {
            Some("signed in interactively, which it never does".to_string())
        } else if from_unlisted {
            Some(format!(
                "signed in from {}, outside its listed addresses ({})",
                sign_in.source_ip.as_deref().unwrap_or_default(),
                account.ips.join(", ")
            ))
        } else {
            None
        };
        let Some(problem) = problem else {
            if !account.ips.is_empty() && sign_in.source_ip.is_some() {
                out.push(
                    Judgement::new(
                        Weight::Explains,
                        format!("{} signed in from where it works", account.user),
                        format!("The service account {} signed in non-interactively from its listed addresses.", account.user),
                    )
                    .artifact(entity.value.clone())
                    .evidence("service_account_profile", json!({"account": account.user, "ips": account.ips}))
                    .tag("service_account_expected", account.user.clone())
                    .covers(Covers::Allowance(Context::behaviours(&account.behaviours))),
                );
            }
            continue;
        };
        out.push(
            Judgement::new(
                Weight::Malicious,
                format!("Service account {} {problem}", account.user),
                format!(
                    "The service account {} {problem}. Service accounts run unattended jobs; a person using \
                     one means its credential was taken.",
                    account.user
                ),
            )
            .artifact(entity.value.clone())
            .evidence(
                "service_account_profile",
                json!({"account": account.user, "interactive_allowed": account.interactive, "ips": account.ips, "source_ip": sign_in.source_ip}),
            )
            .tactic("Initial Access")
            .tag("service_account_misuse", account.user.clone())
            .urgent("a service account's credential is in someone else's hands")
            .remediation(format!("Disable {} now, rotate its credential and find where it was taken from", account.user)),
        );
    }
}

/// Password guessing described by an alert that is not a sign-in alert (a cloud detector,
/// a host log): judged the same way.
pub(crate) fn guessing_elsewhere(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let empty = SignInSignal::default();
    let sign_in = case.signals.sign_in.as_ref().unwrap_or(&empty);
    let user = case
        .person_phrase()
        .unwrap_or_else(|| "the account".to_string());
    guessing(case, sign_in, &user, out);
}

fn guessing(case: &Case<'_>, sign_in: &SignInSignal, user: &str, out: &mut Vec<Judgement>) {
    let failures = sign_in.failure_count.unwrap_or(0);
    let targets = sign_in.targeted_accounts.unwrap_or(0);
    let spray = targets >= 5 || case.mentions(PASSWORD_SPRAY_WORDS);
    let brute = failures >= 10 || case.mentions(BRUTE_FORCE_WORDS);
    if !spray && !brute {
        return;
    }
    let succeeded = sign_in.succeeded == Some(true);
    let kind = if spray {
        "Password spray"
    } else {
        "Brute force"
    };
    let source = sign_in
        .source_ip
        .clone()
        .or_else(|| {
            case.alert
                .entities_of(EntityKind::Ip)
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "an unknown source".to_string());
    // Guessing many accounts, or one account from the internet, is an attack whether or
    // not it worked; one account failing from inside is as often a stale saved password.
    let from_outside = case
        .lookup(EntityKind::Ip, &source)
        .and_then(|knowledge| knowledge.place)
        .is_some_and(|place| !place.is_own());
    let mut judgement = Judgement::new(
        if succeeded || spray || from_outside {
            Weight::Malicious
        } else {
            Weight::Suspicious
        },
        format!(
            "{kind} from {source}{}",
            if succeeded { " succeeded" } else { "" }
        ),
        format!(
            "{kind}: {}{} from {source}{}.",
            if failures > 0 {
                format!("{failures} failed attempts")
            } else {
                "repeated failed attempts".to_string()
            },
            if targets > 0 {
                format!(" against {targets} accounts")
            } else {
                format!(" against {user}")
            },
            if succeeded {
                ", and then a sign-in succeeded: the guessing worked"
            } else {
                "; none is reported to have succeeded"
            }
        ),
    )
    .artifact(source.clone())
    .evidence(
        "authentication_failures",
        json!({"failures": failures, "accounts": targets, "succeeded": succeeded}),
    )
    .tactic("Credential Access")
    .tag(
        if spray {
            "password_spray"
        } else {
            "brute_force"
        },
        source.clone(),
    )
    .remediation(format!(
        "Block {source} and check every account it tried for a later successful sign-in"
    ))
    .restates_claim();
    judgement = if succeeded {
        judgement.remediation(format!(
            "Reset the password of {user} and revoke its sessions"
        ))
    } else {
        judgement.attempt()
    };
    out.push(judgement);
}

fn outcome(case: &Case<'_>, sign_in: &SignInSignal, user: &str, out: &mut Vec<Judgement>) {
    if sign_in.succeeded == Some(false) {
        out.push(
            Judgement::new(
                Weight::Neutral,
                "The sign-in failed",
                format!(
                    "The sign-in attempt for {user} did not succeed, so no session was obtained."
                ),
            )
            .evidence("sign_in_result", json!({"succeeded": false}))
            .tag("blocked_by_source", "sign-in failed"),
        );
    } else if sign_in.succeeded == Some(true)
        && case
            .known
            .iter()
            .any(|(_, knowledge)| knowledge.identity.is_some())
    {
        out.push(
            Judgement::new(
                Weight::Neutral,
                "The sign-in succeeded",
                format!("The sign-in for {user} succeeded: whoever it was holds a session now."),
            )
            .evidence("sign_in_result", json!({"succeeded": true})),
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use sleuth_domain::History;

    use super::*;
    use crate::context::ContextDocument;

    /// A person who works from Germany, an admin who works from Britain, and an
    /// organisation whose usual countries are neither.
    const CONTEXT: &str = r#"
[organization]
usual_countries = ["US"]

[[identities]]
user = "l.weber@example.com"
location = "DE"

[[identities]]
user = "helpdesk.admin@example.com"
location = "GB"
"#;

    fn unusual_country_findings(alert: &Value) -> Vec<String> {
        let context =
            Context::build(ContextDocument::from_toml(CONTEXT).expect("reads")).expect("valid");
        let parsed = sleuth_parsers::parse_alert(None, alert, chrono::Utc::now()).expect("parses");
        let history = History::default();
        let case = Case::new(&parsed, &history, &context);
        let sign_in = case.signals.sign_in.clone().expect("a sign-in alert");
        let mut out = Vec::new();
        location(&case, &sign_in, "the account", &mut out);
        out.into_iter()
            .filter(|judgement| judgement.tags.iter().any(|(tag, _)| *tag == "new_country"))
            .map(|judgement| judgement.headline)
            .collect()
    }

    /// A Splunk notable naming the admin who unlocked an account (the source user, listed
    /// first among its entities) and the account that then signed in (the target user).
    fn sign_in(user: &str, other: &str, country: &str) -> Value {
        json!({
            "_time": "2026-03-04T10:02:11.000+00:00",
            "event_id": "A1@@notable@@b2",
            "rule_name": "Access - Sign-in after account unlock",
            "rule_title": "Sign-in after a help-desk unlock",
            "security_domain": "access",
            "urgency": "medium",
            "src_user": other,
            "dest_user": user,
            "src": "198.51.100.30",
            "src_country": country,
            "app": "Office 365",
            "action": "success",
        })
    }

    #[test]
    fn the_home_country_is_the_signing_in_persons_own() {
        // From home, whichever other identity the alert names first.
        let home = sign_in("l.weber@example.com", "helpdesk.admin@example.com", "DE");
        assert_eq!(unusual_country_findings(&home), Vec::<String>::new());
        // From the other person's home country: unusual for this one.
        let away = sign_in("l.weber@example.com", "helpdesk.admin@example.com", "GB");
        assert_eq!(unusual_country_findings(&away).len(), 1);
    }
}
