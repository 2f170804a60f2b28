//! Which record fields hold the message as it was first sent (topic, key, payload, headers).
//! A profile names them, the manifest seals them, execute sends them back.

use serde::{Deserialize, Serialize};

/// Where a record came from, by the names of its fields (the profile's origin fields): what
/// execute sends back, and where. Any field may be absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// The topic or queue the message failed on.
    #[serde(default)]
    pub topic: Option<String>,
    /// The message's own key.
    #[serde(default)]
    pub key: Option<String>,
    /// The payload the consumer expects; without it the whole record is the payload.
    #[serde(default)]
    pub value: Option<String>,
    /// The message's headers (a JSON object of names to values).
    #[serde(default)]
    pub headers: Option<String>,
}
