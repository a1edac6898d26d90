//! The kinds of behaviour a detection can assert (the claim, claim.rs) and an allowance
//! of the operator's context can name (docs/context.md, `behaviours` and `never`). Both
//! the context and the judgements read this list, and it reads nothing of theirs.

/// What a detection asserts happened, in kinds an allowance can name (docs/context.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Behaviour {
    CredentialDumping,
    Ransomware,
    /// Audit logs, detectors or security tools turned off or deleted.
    SecurityTampering,
    BackupDeletion,
    /// Roles, policies, group memberships or sudo rights granted.
    PrivilegeGrant,
    /// A foothold that survives: new keys, users, tasks, services, MFA factors.
    Persistence,
    /// A shell handed to a remote host.
    ReverseShell,
    Cryptomining,
    CredentialGuessing,
    Scanning,
    ExploitAttempt,
    Exfiltration,
    CommandAndControl,
    /// A file or process the source judged malicious.
    Malware,
    /// A remote-control tool or session.
    RemoteAccess,
    LateralMovement,
    /// Code run in a suspicious way (script interpreters, system binaries, containers).
    Execution,
    /// Phishing, malware or impersonation sent by mail.
    MessageThreat,
    ExposedSecret,
    /// A sign-in unusual in where or how it came (location, travel, device, network).
    SignInAnomaly,
    /// A weakness rather than an act: a failed control, a vulnerable version, an exposure.
    Posture,
    /// Anything else the detection says.
    Other,
}

impl Behaviour {
    /// The name an allowance uses for it (docs/context.md, `behaviours`).
    pub const fn name(self) -> &'static str {
        match self {
            Behaviour::CredentialDumping => "credential_dumping",
            Behaviour::Ransomware => "ransomware",
            Behaviour::SecurityTampering => "security_tampering",
            Behaviour::BackupDeletion => "backup_deletion",
            Behaviour::PrivilegeGrant => "privilege_grant",
            Behaviour::Persistence => "persistence",
            Behaviour::ReverseShell => "reverse_shell",
            Behaviour::Cryptomining => "cryptomining",
            Behaviour::CredentialGuessing => "credential_guessing",
            Behaviour::Scanning => "scanning",
            Behaviour::ExploitAttempt => "exploit_attempt",
            Behaviour::Exfiltration => "exfiltration",
            Behaviour::CommandAndControl => "command_and_control",
            Behaviour::Malware => "malware",
            Behaviour::RemoteAccess => "remote_access",
            Behaviour::LateralMovement => "lateral_movement",
            Behaviour::Execution => "execution",
            Behaviour::MessageThreat => "message_threat",
            Behaviour::ExposedSecret => "exposed_secret",
            Behaviour::SignInAnomaly => "sign_in_anomaly",
            Behaviour::Posture => "posture",
            Behaviour::Other => "other",
        }
    }

    /// Every behaviour, for the context checker's closed list.
    pub const ALL: &'static [Behaviour] = &[
        Behaviour::CredentialDumping,
        Behaviour::Ransomware,
        Behaviour::SecurityTampering,
        Behaviour::BackupDeletion,
        Behaviour::PrivilegeGrant,
        Behaviour::Persistence,
        Behaviour::ReverseShell,
        Behaviour::Cryptomining,
        Behaviour::CredentialGuessing,
        Behaviour::Scanning,
        Behaviour::ExploitAttempt,
        Behaviour::Exfiltration,
        Behaviour::CommandAndControl,
        Behaviour::Malware,
        Behaviour::RemoteAccess,
        Behaviour::LateralMovement,
        Behaviour::Execution,
        Behaviour::MessageThreat,
        Behaviour::ExposedSecret,
        Behaviour::SignInAnomaly,
        Behaviour::Posture,
        Behaviour::Other,
    ];

    pub fn parse(name: &str) -> Option<Behaviour> {
        let name = name.trim().to_ascii_lowercase();
        Behaviour::ALL
            .iter()
            .copied()
            .find(|behaviour| behaviour.name() == name)
    }

    /// Behaviours that do harm whoever does them: only an allowance that names the
    /// behaviour explains one.
    pub fn high_harm(self) -> bool {
        matches!(
            self,
            Behaviour::CredentialDumping
                | Behaviour::Ransomware
                | Behaviour::SecurityTampering
                | Behaviour::BackupDeletion
                | Behaviour::PrivilegeGrant
                | Behaviour::Persistence
                | Behaviour::ReverseShell
        )
    }

    /// The ATT&CK tactic of the behaviour, for an alert whose source and findings name none.
    pub fn tactic(self) -> Option<&'static str> {
        Some(match self {
            Behaviour::CredentialDumping
            | Behaviour::CredentialGuessing
            | Behaviour::ExposedSecret => "Credential Access",
            Behaviour::Ransomware | Behaviour::BackupDeletion | Behaviour::Cryptomining => "Impact",
            Behaviour::SecurityTampering => "Defense Evasion",
            Behaviour::PrivilegeGrant => "Privilege Escalation",
            Behaviour::Persistence => "Persistence",
            Behaviour::ReverseShell => "Execution",
            Behaviour::Scanning => "Discovery",
            Behaviour::ExploitAttempt | Behaviour::MessageThreat | Behaviour::SignInAnomaly => {
                "Initial Access"
            }
            Behaviour::Exfiltration => "Exfiltration",
            Behaviour::CommandAndControl | Behaviour::RemoteAccess => "Command and Control",
            Behaviour::LateralMovement => "Lateral Movement",
            // A file verdict at rest, a weakness, an unknown detection, or "a process did
            // something" (every process alert) imply no tactic by themselves.
            Behaviour::Malware | Behaviour::Posture | Behaviour::Execution | Behaviour::Other => {
                return None;
            }
        })
    }

    /// Whether the claim is about where or how an actor connected, so that a fact about the
    /// actor's network (the corporate VPN, the office) answers it.
    pub fn about_location(self) -> bool {
        self == Behaviour::SignInAnomaly
    }
}
