//! Microsoft's security products: Defender for Endpoint, the Graph security alerts that
//! unify Defender XDR, Defender for Office 365, Sentinel, and Entra ID Protection. One
//! module per product; what their formats share (JSON held in strings, keys spelled
//! with different capitals, Defender's classification vocabulary) is in `common`.

mod common;
pub(crate) mod defender_endpoint;
pub(crate) mod entra;
pub(crate) mod graph;
pub(crate) mod office365;
pub(crate) mod sentinel;
