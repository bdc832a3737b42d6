//! JSON documents: pretty-printed, one object, a final newline.

use serde::Serialize;

pub fn render<T: Serialize>(document: &T) -> String {
    match serde_json::to_string_pretty(document) {
        Ok(mut text) => {
            text.push('\n');
            text
        }
        // Our documents are plain structs of strings and numbers; serialising them cannot fail.
        Err(e) => {
            format!("{{\"schema_version\": 1, \"error\": \"cannot serialise the report: {e}\"}}\n")
        }
    }
}
