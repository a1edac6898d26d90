//! The status channel: one line per event, written by the launcher on descriptor 3 and read
//! by the parent. The script never holds this descriptor (it is close-on-exec in the process
//! that becomes the interpreter), so nothing on it can be forged by the script.

/// The descriptor the parent places the status pipe on in the launcher.
pub(crate) const STATUS_DESCRIPTOR: i32 = 3;

/// How the interpreter process ended, as its reaper saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScriptExit {
    Exited(i32),
    Signaled(i32),
}

/// One isolation layer as the launcher reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LayerEvent {
    pub layer: String,
    pub detail: String,
}

/// Everything the launcher said about one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LauncherReport {
    pub applied: Vec<LayerEvent>,
    pub unavailable: Vec<LayerEvent>,
    /// Why the launcher gave up before (or instead of) running the script.
    pub fatal: Option<String>,
    /// The interpreter was about to be executed with every required layer in place.
    pub interpreter_started: bool,
    pub script_exit: Option<ScriptExit>,
    /// Connections the egress guard refused: `destination (reason)`, the first few.
    pub denied_connections: Vec<String>,
    /// Refusals beyond those listed.
    pub denied_unreported: usize,
}

impl LauncherReport {
    pub(crate) fn parse(text: &str) -> LauncherReport {
        let mut report = LauncherReport::default();
        for line in text.lines() {
            let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
            match word {
                "applied" => report.applied.push(layer_event(rest)),
                "unavailable" => report.unavailable.push(layer_event(rest)),
                // The first fatal message is the cause; later ones are consequences.
                "fatal" if report.fatal.is_none() => report.fatal = Some(rest.to_owned()),
                "exec" => report.interpreter_started = true,
                "exit" => report.script_exit = rest.parse().ok().map(ScriptExit::Exited),
                "signal" => report.script_exit = rest.parse().ok().map(ScriptExit::Signaled),
                "denied" => report.denied_connections.push(rest.to_owned()),
                "denied-more" => report.denied_unreported = rest.parse().unwrap_or(0),
                _ => {}
            }
        }
        report
    }

    /// The layers that applied, for `ScriptOutcome::isolation`, e.g.
    /// `rlimits, pid-namespace, dedicated-uid 2000000001, landlock abi 7`.
    pub(crate) fn applied_summary(&self) -> String {
        let parts: Vec<String> = self
            .applied
            .iter()
            .map(|event| {
                if event.detail.is_empty() {
                    event.layer.clone()
                } else {
                    format!("{} {}", event.layer, event.detail)
                }
            })
            .collect();
        parts.join(", ")
    }
}

fn layer_event(rest: &str) -> LayerEvent {
    let (layer, detail) = rest.split_once(' ').unwrap_or((rest, ""));
    LayerEvent {
        layer: layer.to_owned(),
        detail: detail.to_owned(),
    }
}

/// Formats one status line: a single line whatever the message holds.
pub(crate) fn status_line(word: &str, message: &str) -> String {
    let flattened: String = message
        .chars()
        .map(|character| {
            if character.is_control() {
                ' '
            } else {
                character
            }
        })
        .collect();
    if flattened.is_empty() {
        format!("{word}\n")
    } else {
        format!("{word} {flattened}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_report_is_read_back() {
        let text = [
            status_line("applied", "rlimits"),
            status_line("applied", "pid-namespace"),
            status_line("unavailable", "user-namespace not needed"),
            status_line("applied", "landlock abi 7"),
            status_line("exec", ""),
            status_line("exit", "3"),
        ]
        .concat();
        let report = LauncherReport::parse(&text);
        assert!(report.interpreter_started);
        assert_eq!(report.script_exit, Some(ScriptExit::Exited(3)));
        assert_eq!(report.fatal, None);
        assert_eq!(report.unavailable[0].layer, "user-namespace");
        assert_eq!(
            report.applied_summary(),
            "rlimits, pid-namespace, landlock abi 7"
        );
    }

    #[test]
    fn refused_connections_are_read_back_with_their_count() {
        let text = [
            status_line("applied", "egress-guard"),
            status_line("denied", "127.0.0.1:5432 (a loopback address)"),
            status_line("denied", "[::1]:6379 (a loopback address)"),
            status_line("exit", "0"),
            status_line("denied-more", "7"),
        ]
        .concat();
        let report = LauncherReport::parse(&text);
        assert_eq!(
            report.denied_connections,
            [
                "127.0.0.1:5432 (a loopback address)",
                "[::1]:6379 (a loopback address)"
            ]
        );
        assert_eq!(report.denied_unreported, 7);
    }

    #[test]
    fn the_first_fatal_message_is_the_cause() {
        let text = [
            status_line("fatal", "landlock is not enforced"),
            status_line("fatal", "later"),
        ]
        .concat();
        let report = LauncherReport::parse(&text);
        assert_eq!(report.fatal.as_deref(), Some("landlock is not enforced"));
        assert!(!report.interpreter_started);
    }

    #[test]
    fn a_message_with_newlines_stays_on_one_line() {
        assert_eq!(status_line("fatal", "a\nb"), "fatal a b\n");
        assert_eq!(
            LauncherReport::parse(&status_line("signal", "24")).script_exit,
            Some(ScriptExit::Signaled(24))
        );
    }
}
