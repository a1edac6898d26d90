//! Every word list the playbooks and the claim look for in an alert's text, in one place.
//!
//! A list exists only as a [`Words`], and a `Words` can only be made by the
//! `vocabulary!` macro below, which also registers it: every list a playbook can ask a
//! case about is part of the one pass over the alert's text that builds the case
//! (case.rs). A list written anywhere else is a plain slice, which `Case::mentions` does
//! not accept: forgetting to register a list does not compile.
//!
//! Each list knows its place in the vocabulary (the index of its first word), so asking
//! whether a case mentions it is a few bit tests, not a lookup by word.

/// One registered word list: its words, and the index of its first word among all of them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Words {
    first: usize,
    words: &'static [&'static str],
}

impl Words {
    /// The vocabulary indices of the list's words, in list order.
    pub(crate) fn indexed(self) -> impl Iterator<Item = (usize, &'static str)> {
        (self.first..).zip(self.words.iter().copied())
    }
}

impl std::ops::Deref for Words {
    type Target = [&'static str];

    fn deref(&self) -> &[&'static str] {
        self.words
    }
}

/// Declares the lists: each becomes a `Words` whose first index follows the previous
/// list's last, and `ALL` holds them in order.
macro_rules! vocabulary {
    ($($(#[$doc:meta])* $name:ident = [$($word:literal),* $(,)?];)*) => {
        vocabulary!(@list 0; $($(#[$doc])* $name = [$($word),*];)*);
        /// Every registered list, in the order declared.
        pub(crate) const ALL: &[Words] = &[$($name),*];
    };
    (@list $first:expr; $(#[$doc:meta])* $name:ident = [$($word:literal),*]; $($rest:tt)*) => {
        $(#[$doc])*
        pub(crate) const $name: Words = Words { first: $first, words: &[$($word),*] };
        vocabulary!(@list $name.first + $name.words.len(); $($rest)*);
    };
    (@list $first:expr;) => {
        /// How many words the lists hold together (a word in two lists counts twice).
        pub(crate) const COUNT: usize = $first;
    };
}

vocabulary! {
    // Asked by playbooks::common.
    /// Words of alerts that scanners trip: what an authorised scanner explains.
    SCAN_WORDS = [
        "scan",
        "probe",
        "recon",
        "discovery",
        "sweep",
        "exploit",
        "vulnerab",
        "cve-",
        "injection",
        "brute",
        "password guess",
        "traversal",
        "attempted",
        "web application attack",
        "nmap",
        "nessus",
        "qualys",
        "portprobe",
        "port_probe",
        "enumerat",
        "shellshock",
        "log4j",
        "failed login",
        "failed logon",
        "login failure",
        "logon failure",
        "authentication failure",
        "failed authentication",
        "excessive failed",
    ];

    // Asked by playbooks::behaviour.
    /// Words of lsass alerts.
    LSASS = [
        "lsass",
    ];
    /// Words of lsass dumpers alerts.
    LSASS_DUMPERS = [
        "sekurlsa",
        "mimikatz",
    ];
    LSASS_TOOLS = [
        "procdump",
        "comsvcs",
        "minidump",
        "sekurlsa",
        "mimikatz",
        "nanodump",
        "pypykatz",
        "lsassy",
        "dumpert",
        "handlekatz",
        "sqldumper",
        "createdump",
        "rdrleakdiag",
    ];
    DCSYNC_WORDS = [
        "dcsync",
        "drsuapi",
        "getncchanges",
        "replicating directory changes",
        "lsadump::dcsync",
        "directory service replication",
    ];
    NTDS_WORDS = [
        "ntds.dit",
        "ntdsutil",
        "ifm create",
        "vssadmin create shadow",
    ];
    /// Credential stores outside Windows: macOS keychains, Linux shadow files, browsers.
    CREDENTIAL_STORE_WORDS = [
        "dump-keychain",
        "keychaindump",
        "keychain dump",
        "chainbreaker",
        "find-generic-password",
        "find-internet-password",
        "login.keychain",
        "/etc/shadow",
        "unshadow",
        "login data",
        "logins.json",
        "key4.db",
    ];
    KERBEROS_WORDS = [
        "kerberoast",
        "rubeus",
        "asreproast",
        "golden ticket",
        "silver ticket",
    ];
    RANSOMWARE_WORDS = [
        "ransom",
        "vssadmin delete shadows",
        "vssadmin.exe delete shadows",
        "delete shadows",
        "shadowcopy delete",
        "wbadmin delete",
        "bcdedit /set {default} recoveryenabled no",
        "recoveryenabled no",
        "cipher /w",
        "encrypted files",
        "file encryption",
        "lockbit",
        "blackcat",
        "alphv",
        "conti",
        "ryuk",
        "akira",
        "black basta",
    ];

    // Asked by playbooks::endpoint.
    MALWARE_WORDS = [
        "malware",
        "trojan",
        "backdoor",
        "cobalt strike",
        "beacon",
        "infostealer",
        "stealer",
        "keylogger",
        "remote access trojan",
        "worm",
        "virus",
        "ransomware",
        "cryptominer",
        "coinminer",
        "webshell",
        "web shell",
        "rootkit",
        "exploit kit",
        "emotet",
        "qakbot",
        "icedid",
        "trickbot",
        "agent tesla",
        "redline",
        "lumma",
        "asyncrat",
        "njrat",
        "meterpreter",
        "threat signature",
        "threat match",
        "known threat",
        "sliver",
        "brute ratel",
        "malicious file",
        "known malicious",
    ];
    /// Remote-access tools: legitimate software that attackers install for a foothold that
    /// looks like IT support (ATT&CK T1219).
    REMOTE_ACCESS_TOOLS = [
        "anydesk",
        "teamviewer",
        "screenconnect",
        "connectwise control",
        "rustdesk",
        "splashtop",
        "atera",
        "netsupport",
        "logmein",
        "remote utilities",
        "meshagent",
        "ngrok",
        "tacticalrmm",
    ];

    // Asked by playbooks::identity.
    /// Words of impossible travel alerts.
    IMPOSSIBLE_TRAVEL_WORDS = [
        "impossible travel",
        "impossibletravel",
        "atypical travel",
        "atypicaltravel",
        "impossible_travel",
        "improbable access",
        "geographically improbable",
        "improbable travel",
    ];
    /// Words of mfa fatigue alerts.
    MFA_FATIGUE_WORDS = [
        "mfa fatigue",
        "push fatigue",
        "push bombing",
        "mfa bombing",
        "push spam",
    ];
    /// Words of mfa reset alerts.
    MFA_RESET_WORDS = [
        "factor.deactivate",
        "mfa.factor.reset",
        "factor reset",
        "mfa reset",
        "reset mfa",
        "authentication method removed",
        "deleted security info",
        "mfa_removed",
    ];
    /// Words of leaked credential alerts.
    LEAKED_CREDENTIAL_WORDS = [
        "leaked password",
        "leaked credential",
    ];
    /// Words of interactive logon alerts.
    INTERACTIVE_LOGON_WORDS = [
        "interactive",
        "rdp",
        "remoteinteractive",
        "logon type 10",
        "logon type 2",
        "console login",
    ];
    /// Words of password spray alerts.
    PASSWORD_SPRAY_WORDS = [
        "password spray",
        "passwordspray",
        "password_spray",
    ];
    /// Words of brute force alerts.
    BRUTE_FORCE_WORDS = [
        "brute force",
        "bruteforce",
        "brute-force",
        "password guessing",
        "password_guessing",
        "authentication failures",
    ];

    // Asked by playbooks::email.
    /// Words of email threat alerts.
    EMAIL_THREAT_WORDS = [
        "phish",
        "malware",
        "impersonat",
        "business email compromise",
        "credential harvest",
    ];
    /// Words of bec alerts.
    BEC_WORDS = [
        "bec",
    ];
    /// Words of lookalike alerts.
    LOOKALIKE_WORDS = [
        "lookalike",
        "look-alike",
        "cousin domain",
    ];

    // Asked by playbooks::cloud.
    /// Words of root alerts.
    ROOT_WORDS = [
        "root credential",
        "rootcredentialusage",
        "root account",
    ];
    /// Words of container exec alerts.
    CONTAINER_EXEC_WORDS = [
        "kubectl exec",
        "pods/exec",
        "docker exec",
    ];
    /// Words of cryptomining alerts.
    CRYPTOMINING_WORDS = [
        "cryptocurrency",
        "bitcoin",
        "crypto mining",
        "cryptomining",
        "coinminer",
        "xmrig",
        "monero",
        "mining pool",
    ];
    /// Words of instance credential alerts.
    INSTANCE_CREDENTIAL_WORDS = [
        "instancecredentialexfiltration",
        "credential exfiltration",
        "credentials were used from outside",
        "outsideaws",
    ];
    /// Words of public exposure alerts.
    PUBLIC_EXPOSURE_WORDS = [
        "publicly accessible",
        "public access",
        "allusers",
        "allauthenticatedusers",
        "world-readable",
        "open to the internet",
        "0.0.0.0/0",
    ];

    // Asked by playbooks::network.
    /// Words of scan notice alerts.
    SCAN_NOTICE_WORDS = [
        "port scan",
        "port_scan",
        "portscan",
        "address scan",
        "address_scan",
        "portprobe",
        "port probe",
        "network scan",
        "scan::",
    ];
    /// Words of exfiltration alerts.
    EXFILTRATION_WORDS = [
        "exfiltration",
        "data transfer",
        "large upload",
        "data theft",
    ];
    ATTACK_WORDS = [
        "exploit",
        "cve-",
        "attempted administrator",
        "attempted user privilege",
        "web application attack",
        "sql injection",
        "sql_injection",
        "command injection",
        "remote code execution",
        "directory traversal",
        "path traversal",
        "shellshock",
        "log4j",
        "jndi",
        "deserialization",
        "buffer overflow",
        "webshell upload",
    ];
    C2_WORDS = [
        "command and control",
        "c2",
        "cnc",
        "beacon",
        "trojan was detected",
        "malware",
        "botnet",
        "cobalt strike",
        "rat",
        "backdoor",
        "callback",
    ];

    // Asked by the claim (claim.rs).
    /// Words that say what an alert asserts, most specific behaviour first (`of` tries them in
    /// this order).
    TAMPERING_WORDS = [
        "stoplogging",
        "deletetrail",
        "deletedetector",
        "disablesecurityhub",
        "deleteflowlogs",
        "deletelogsink",
        "tamper",
        "disable defender",
        "disabled defender",
        "set-mppreference",
        "wevtutil cl",
        "clear-eventlog",
        "audit log cleared",
        "log cleared",
        "cleared the security log",
    ];
    BACKUP_DELETION_WORDS = [
        "deletebackup",
        "deleterecoverypoint",
        "deletesnapshot",
        "delete snapshot",
        "backup deleted",
        "deletebackupvault",
    ];
    PRIVILEGE_WORDS = [
        "setiampolicy",
        "attachuserpolicy",
        "attachrolepolicy",
        "putuserpolicy",
        "putrolepolicy",
        "addusertogroup",
        "updateassumerolepolicy",
        "roles/owner",
        "anomalous grant",
        "role assignment",
        "domain admins",
        "enterprise admins",
        "admin role",
        "super admin",
        "privilege.grant",
        "sudoers",
        "nopasswd",
        "added to a privileged group",
        "added to a security-enabled global group",
        "a member was added to a security-enabled",
    ];
    PERSISTENCE_WORDS = [
        "createaccesskey",
        "createloginprofile",
        "createuser",
        "createserviceaccountkey",
        "scheduled task",
        "schtasks",
        "launch agent",
        "launchagent",
        "launch daemon",
        "launchdaemon",
        "persistence",
        "persistency",
        "autostart",
        "run key",
        "crontab",
        "new service",
        "factor.reset",
        "factor.deactivate",
        "reset all factors",
        "mfa reset",
        "factor reset",
    ];
    REVERSE_SHELL_WORDS = [
        "reverse shell",
        "/dev/tcp/",
        "/dev/udp/",
        "redirect stdout/stdin to network",
        "exec:/bin/",
        "exec:cmd",
        "nc -e",
        "ncat -e",
        "bash -i >&",
    ];
    EXFILTRATION_CLAIM_WORDS = [
        "exfiltrat",
        "tunnel",
        "takeout",
        "large upload",
        "mass download",
        "mass file download",
        "data transfer",
        "copied to a project outside",
        "forwarding rule",
        "forwards all mail",
        "forward to external",
    ];
    C2_CLAIM_WORDS = [
        "command and control",
        "command-and-control",
        "beacon",
        "blackhole",
        "bad domain",
        "bad ip",
        "trojan",
        "backdoor",
        "callback",
        "c2 ",
        "tor traffic",
    ];
    SIGN_IN_WORDS = [
        "unfamiliar",
        "atypical",
        "impossible travel",
        "impossibletravel",
        "unusual location",
        "new country",
        "rare country",
        "new device",
        "anonymous ip",
        "anonymizedip",
        "unlikelytravel",
        "improbable",
        "new location",
        "sign-in from",
        "signin from",
        "login from",
    ];
    POSTURE_WORDS = [
        "vulnerab",
        "cve-",
        "should be enabled",
        "should not",
        "misconfigur",
        "certificate_expired",
        "certificate expired",
        "publicly accessible",
        "open firewall",
        "compliance",
    ];
    /// Whole words that name scanning (not "scan" inside "scanner" or "ondemandscan").
    SCAN_CLAIM_WORDS = [
        "scan",
        "scanned",
        "nmap",
        "portprobe",
        "port probe",
        "recon",
        "reconnaissance",
    ];
    /// Words of findings that report a weakness (a vulnerable package), not an act.
    VULNERABILITY_WORDS = [
        "vulnerabilities/cve",
        "vulnerable package",
        "vulnerable version",
        "software_vulnerable",
        "vulnerable_version",
        "package vulnerability",
    ];
    LATERAL_WORDS = [
        "lateral movement",
        "psexec",
        "remote service",
        "wmiexec",
        "pass-the-hash",
        "pass the hash",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_number_their_words_one_after_another() {
        let mut next = 0;
        for list in ALL {
            for (index, _) in list.indexed() {
                assert_eq!(index, next);
                next += 1;
            }
        }
        assert_eq!(next, COUNT);
    }
}
