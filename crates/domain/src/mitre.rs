//! MITRE ATT&CK (Enterprise) vocabulary: the tactics in their canonical spelling, and the
//! tactic of the techniques security tools name most. Tools spell tactics every way
//! ("TA0006", "credential-access", "CredentialAccess", "Credential Access"); the parsers
//! hand them all to [`canonical_tactic`] so the rest of Sleuth sees one spelling.

/// The Enterprise tactics, in kill-chain order: (id, canonical name).
pub const TACTICS: &[(&str, &str)] = &[
    ("TA0043", "Reconnaissance"),
    ("TA0042", "Resource Development"),
    ("TA0001", "Initial Access"),
    ("TA0002", "Execution"),
    ("TA0003", "Persistence"),
    ("TA0004", "Privilege Escalation"),
    ("TA0005", "Defense Evasion"),
    ("TA0006", "Credential Access"),
    ("TA0007", "Discovery"),
    ("TA0008", "Lateral Movement"),
    ("TA0009", "Collection"),
    ("TA0011", "Command and Control"),
    ("TA0010", "Exfiltration"),
    ("TA0040", "Impact"),
];

/// The names of [`TACTICS`], squeezed (see [`squeeze`]), in the same order.
const SQUEEZED_TACTICS: [&str; 14] = [
    "reconnaissance",
    "resourcedevelopment",
    "initialaccess",
    "execution",
    "persistence",
    "privilegeescalation",
    "defenseevasion",
    "credentialaccess",
    "discovery",
    "lateralmovement",
    "collection",
    "commandandcontrol",
    "exfiltration",
    "impact",
];

/// The canonical name of a tactic written any common way, or `None` when it is not one.
pub fn canonical_tactic(text: &str) -> Option<&'static str> {
    let trimmed = text.trim();
    if let Some((_, name)) = TACTICS
        .iter()
        .find(|(id, _)| id.eq_ignore_ascii_case(trimmed))
    {
        return Some(name);
    }
    let squeezed = squeeze(trimmed);
    if squeezed.is_empty() {
        return None;
    }
    SQUEEZED_TACTICS
        .iter()
        .position(|name| *name == squeezed)
        .map(|index| TACTICS[index].1)
        .or(match squeezed.as_str() {
            // Older and vendor spellings.
            "commandcontrol" | "c2" => Some("Command and Control"),
            "privesc" => Some("Privilege Escalation"),
            "credentialtheft" | "credentialaccesscredentialdumping" => Some("Credential Access"),
            "lateralmovements" => Some("Lateral Movement"),
            "exfil" => Some("Exfiltration"),
            "initialaccessphishing" => Some("Initial Access"),
            _ => None,
        })
}

/// The position of a tactic in the kill chain (later is further along an attack).
pub fn tactic_stage(name: &str) -> Option<usize> {
    TACTICS.iter().position(|(_, tactic)| *tactic == name)
}

/// Lower-case letters and digits only: "Command-and-Control" and "command_and_control"
/// both become "commandandcontrol".
fn squeeze(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|character| character.to_ascii_lowercase())
        .collect()
}

/// Whether `text` looks like an ATT&CK technique id ("T1059" or "T1059.001").
pub fn is_technique_id(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('T') else {
        return false;
    };
    let (main, sub) = match rest.split_once('.') {
        Some((main, sub)) => (main, Some(sub)),
        None => (rest, None),
    };
    main.len() == 4
        && main.bytes().all(|byte| byte.is_ascii_digit())
        && sub.is_none_or(|sub| sub.len() == 3 && sub.bytes().all(|byte| byte.is_ascii_digit()))
}

/// The tactic a technique most often serves. Techniques serve several tactics in ATT&CK;
/// this names the one an analyst would headline. Sub-techniques fall back to their parent.
pub fn tactic_of_technique(technique_id: &str) -> Option<&'static str> {
    let lookup = |id: &str| {
        TECHNIQUE_TACTICS
            .iter()
            .find(|(technique, _)| *technique == id)
            .map(|(_, tactic)| *tactic)
    };
    lookup(technique_id).or_else(|| {
        technique_id
            .split_once('.')
            .and_then(|(parent, _)| lookup(parent))
    })
}

/// The techniques alerts name most, with their headline tactic.
const TECHNIQUE_TACTICS: &[(&str, &str)] = &[
    ("T1595", "Reconnaissance"),
    ("T1592", "Reconnaissance"),
    ("T1589", "Reconnaissance"),
    ("T1583", "Resource Development"),
    ("T1585", "Resource Development"),
    ("T1586", "Resource Development"),
    ("T1566", "Initial Access"),
    ("T1190", "Initial Access"),
    ("T1133", "Initial Access"),
    ("T1078", "Initial Access"),
    ("T1195", "Initial Access"),
    ("T1189", "Initial Access"),
    ("T1199", "Initial Access"),
    ("T1059", "Execution"),
    ("T1204", "Execution"),
    ("T1047", "Execution"),
    ("T1053", "Execution"),
    ("T1106", "Execution"),
    ("T1203", "Execution"),
    ("T1569", "Execution"),
    ("T1610", "Execution"),
    ("T1609", "Execution"),
    ("T1098", "Persistence"),
    ("T1136", "Persistence"),
    ("T1543", "Persistence"),
    ("T1547", "Persistence"),
    ("T1546", "Persistence"),
    ("T1505", "Persistence"),
    ("T1556", "Credential Access"),
    ("T1068", "Privilege Escalation"),
    ("T1548", "Privilege Escalation"),
    ("T1484", "Privilege Escalation"),
    ("T1611", "Privilege Escalation"),
    ("T1055", "Defense Evasion"),
    ("T1027", "Defense Evasion"),
    ("T1070", "Defense Evasion"),
    ("T1562", "Defense Evasion"),
    ("T1218", "Defense Evasion"),
    ("T1036", "Defense Evasion"),
    ("T1112", "Defense Evasion"),
    ("T1140", "Defense Evasion"),
    ("T1497", "Defense Evasion"),
    ("T1535", "Defense Evasion"),
    ("T1578", "Defense Evasion"),
    ("T1003", "Credential Access"),
    ("T1110", "Credential Access"),
    ("T1555", "Credential Access"),
    ("T1552", "Credential Access"),
    ("T1558", "Credential Access"),
    ("T1621", "Credential Access"),
    ("T1528", "Credential Access"),
    ("T1539", "Credential Access"),
    ("T1557", "Credential Access"),
    ("T1040", "Credential Access"),
    ("T1606", "Credential Access"),
    ("T1087", "Discovery"),
    ("T1046", "Discovery"),
    ("T1082", "Discovery"),
    ("T1083", "Discovery"),
    ("T1018", "Discovery"),
    ("T1069", "Discovery"),
    ("T1057", "Discovery"),
    ("T1016", "Discovery"),
    ("T1526", "Discovery"),
    ("T1580", "Discovery"),
    ("T1021", "Lateral Movement"),
    ("T1570", "Lateral Movement"),
    ("T1550", "Lateral Movement"),
    ("T1563", "Lateral Movement"),
    ("T1005", "Collection"),
    ("T1114", "Collection"),
    ("T1530", "Collection"),
    ("T1560", "Collection"),
    ("T1213", "Collection"),
    ("T1071", "Command and Control"),
    ("T1105", "Command and Control"),
    ("T1090", "Command and Control"),
    ("T1572", "Command and Control"),
    ("T1573", "Command and Control"),
    ("T1568", "Command and Control"),
    ("T1219", "Command and Control"),
    ("T1041", "Exfiltration"),
    ("T1048", "Exfiltration"),
    ("T1567", "Exfiltration"),
    ("T1537", "Exfiltration"),
    ("T1020", "Exfiltration"),
    ("T1486", "Impact"),
    ("T1485", "Impact"),
    ("T1490", "Impact"),
    ("T1496", "Impact"),
    ("T1489", "Impact"),
    ("T1531", "Impact"),
    ("T1498", "Impact"),
    ("T1499", "Impact"),
    ("T1491", "Impact"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tactics_written_every_common_way_get_one_spelling() {
        let cases = [
            ("TA0006", Some("Credential Access")),
            ("ta0011", Some("Command and Control")),
            ("credential-access", Some("Credential Access")),
            ("CredentialAccess", Some("Credential Access")),
            ("command_and_control", Some("Command and Control")),
            ("Command & Control", Some("Command and Control")),
            ("Privilege Escalation", Some("Privilege Escalation")),
            ("Falcon Detection Method", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(canonical_tactic(text), expected, "{text}");
        }
    }

    #[test]
    fn sub_techniques_fall_back_to_their_parent() {
        assert_eq!(tactic_of_technique("T1003.001"), Some("Credential Access"));
        assert_eq!(tactic_of_technique("T1059"), Some("Execution"));
        assert_eq!(tactic_of_technique("T9999"), None);
    }

    #[test]
    fn technique_ids_are_recognised_strictly() {
        assert!(is_technique_id("T1059"));
        assert!(is_technique_id("T1059.001"));
        assert!(!is_technique_id("T105"));
        assert!(!is_technique_id("T1059.1"));
        assert!(!is_technique_id("t1059"));
    }

    #[test]
    fn the_squeezed_names_follow_the_tactics() {
        assert_eq!(SQUEEZED_TACTICS.len(), TACTICS.len());
        for (squeezed, (_, name)) in SQUEEZED_TACTICS.iter().zip(TACTICS) {
            assert_eq!(*squeezed, squeeze(name));
        }
    }

    #[test]
    fn the_kill_chain_orders_tactics() {
        assert!(tactic_stage("Exfiltration") > tactic_stage("Initial Access"));
    }
}
