//! Response-action runs as the console shows them: on an investigation's page (the runs
//! fired about it) and in the settings' run history of one action. The outputs of a run
//! (stdout, stderr, the runner's word) are shown to admins only, as the API's run routes
//! answer admins only: a script may print what it was given, secrets included. Others see
//! which action ran, on what, when and how it ended, as an investigation's list item
//! shows them. A script's output may echo alert text: every value is an escaped splice.

use maud::{Markup, html};
use sleuth_domain::ScriptRunStatus;
use sleuth_store::ScriptRunRecord;

use crate::console::pages::time;

fn status_class(status: ScriptRunStatus) -> &'static str {
    match status {
        ScriptRunStatus::Success => "run success",
        ScriptRunStatus::Running => "run running",
        ScriptRunStatus::Failed | ScriptRunStatus::TimedOut | ScriptRunStatus::Error => {
            "run failed"
        }
    }
}

/// The runs as a table, newest first as given. `with_outputs` adds each run's outputs
/// (admins only, see above).
pub(crate) fn table(runs: &[ScriptRunRecord], with_outputs: bool) -> Markup {
    html! {
        table.runs {
            thead { tr { th { "Run" } th { "Action" } th { "Version" } th { "On" } th { "Started" } th { "Status" } th { "Took" } } }
            tbody {
                @for run in runs {
                    tr.run-row {
                        td { (run.id) }
                        td { (run.script.display_name) }
                        td { "v" (run.script_version.v_num) }
                        td {
                            @match (run.trigger_run.investigation_id, &run.trigger_run.entity) {
                                (Some(id), _) => { a href=(format!("/investigations/{id}")) { (run.trigger_run.entity.as_deref().unwrap_or("investigation")) } }
                                (None, Some(entity)) => { (entity) }
                                (None, None) => { "(manual)" }
                            }
                        }
                        td { (time(&run.created_at)) }
                        td { span class=(status_class(run.status)) { (run.status.as_str()) } }
                        td { @if let Some(ms) = run.duration_ms { (ms) " ms" } }
                    }
                    @if with_outputs {
                        tr.run-output {
                            td colspan="7" {
                                (output("stdout", run.stdout.as_deref()))
                                (output("stderr", run.stderr.as_deref()))
                                (output("runner", run.syserr.as_deref()))
                            }
                        }
                    }
                }
            }
        }
    }
}

fn output(label: &str, text: Option<&str>) -> Markup {
    html! {
        @if let Some(text) = text.filter(|text| !text.is_empty()) {
            details.output open[label == "stdout"] {
                summary { (label) }
                pre.output-text { (text) }
            }
        }
    }
}
