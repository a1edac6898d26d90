//! Microsoft's security products: Defender for Endpoint, the Graph security alerts that
//! unify Defender XDR, Defender for Office 365, Sentinel, and Entra ID Protection. One
//! module per product; what their formats share (JSON held in strings, keys spelled
//! with different capitals, Defender's classification vocabulary) is in `common`.

mod common;
pub mod defender_endpoint;
pub mod entra;
pub mod graph;
pub mod office365;
pub mod sentinel;
