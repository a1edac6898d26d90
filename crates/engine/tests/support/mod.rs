//! What the small context tests share: one alert investigated against a context written
//! in the test, with no history.

use serde_json::{Map, Value};
use sleuth_domain::{History, InvestigationResult};
use sleuth_engine::{Context, ContextDocument, EngineInput};

pub(crate) fn investigate(alert: &Value, context: &str) -> InvestigationResult {
    let context = Context::build(ContextDocument::from_toml(context).expect("reads"))
        .expect("the context is valid");
    let parsed = sleuth_parsers::parse_alert(None, alert, chrono::Utc::now()).expect("parses");
    sleuth_engine::investigate(
        &EngineInput {
            alert: &parsed,
            raw: &Map::new(),
            history: &History::default(),
            facts: &sleuth_domain::Facts::default(),
            strategies: &[],
            now: chrono::Utc::now(),
        },
        &context,
    )
}
