//! SPEC's Investigation note.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sleuth_store::NoteRecord;
use utoipa::ToSchema;

use super::user::UserDto;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = InvestigationNote)]
pub struct NoteDto {
    pub id: i64,
    /// The id of the investigation the note is on.
    pub investigation: i64,
    pub text: String,
    /// The author.
    pub user: UserDto,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&NoteRecord> for NoteDto {
    fn from(note: &NoteRecord) -> NoteDto {
        NoteDto {
            id: note.id,
            investigation: note.investigation_id,
            text: note.text.clone(),
            user: UserDto::from(&note.author),
            created_at: note.created_at,
            updated_at: note.updated_at,
        }
    }
}
