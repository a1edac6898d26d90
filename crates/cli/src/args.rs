//! Command-line values shared by several commands.

/// A JSON argument given inline, or as `@FILE` to read it from a file; `what` names it in
/// the error ("settings", "definition").
pub(crate) fn json_argument(text: &str, what: &str) -> anyhow::Result<serde_json::Value> {
    let text = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|error| anyhow::anyhow!("cannot read {path}: {error}"))?,
        None => text.to_string(),
    };
    serde_json::from_str(&text).map_err(|error| anyhow::anyhow!("the {what} is not JSON: {error}"))
}
