//! The wire shapes of SPEC.md that scripts are handed as well as API clients (an
//! investigation, its alert and entities, a user), and the OpenAPI schemas of domain fields
//! they share. They live here because the workers fire triggers without the HTTP layer;
//! the server's `dto` re-exports them beside its own, so each shape is still defined once.

pub mod investigation;
pub mod schema;
pub mod tenant;
pub mod user;
