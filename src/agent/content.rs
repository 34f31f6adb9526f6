//! A tool's result as message parts: text and images pass; what no model API takes in a tool
//! result (audio, binary resources) is described in a line of text.

use super::types::Part;
use crate::model::{CallToolResult, Content, ResourceContents};

/// The parts sent to the model for `result`.
///
/// Text blocks, embedded text resources and images are passed; `structuredContent` is sent as
/// JSON text when the result has no text of its own (servers usually repeat it as text) and is
/// not an error (for an error, the content blocks say what went wrong).
pub(crate) fn parts(result: &CallToolResult) -> Vec<Part> {
    let mut out = Vec::new();
    for block in &result.content {
        match block {
            Content::Text(t) => out.push(Part::Text(t.text.clone())),
            Content::Image(i) => out.push(Part::Image {
                mime_type: i.mime_type.clone(),
                data: i.data.clone(),
            }),
            Content::Audio(a) => out.push(Part::Text(format!(
                "[{} audio, {} bytes of base64, not shown]",
                a.mime_type,
                a.data.len()
            ))),
            Content::ResourceLink(r) => {
                out.push(Part::Text(format!("[resource {} ({})]", r.uri, r.name)))
            }
            Content::Resource(r) => match &r.resource {
                ResourceContents::Text(t) => out.push(Part::Text(t.text.clone())),
                ResourceContents::Blob(b) => match b.mime_type.as_deref() {
                    Some(m) if m.starts_with("image/") => out.push(Part::Image {
                        mime_type: m.to_owned(),
                        data: b.blob.clone(),
                    }),
                    m => out.push(Part::Text(format!(
                        "[resource {}: {}, {} bytes of base64, not shown]",
                        b.uri,
                        m.unwrap_or("binary"),
                        b.blob.len()
                    ))),
                },
            },
            Content::Unknown(v) => out.push(Part::Text(v.to_string())),
        }
    }
    let has_text = out.iter().any(|p| matches!(p, Part::Text(_)));
    if !has_text && result.is_error != Some(true) {
        if let Some(s) = &result.structured_content {
            out.push(Part::Text(s.to_string()));
        }
    }
    if out.is_empty() {
        out.push(Part::Text("(the tool returned no content)".into()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Content, ImageContent};
    use serde_json::json;

    #[test]
    fn text_images_and_structured_content() {
        let mut r = CallToolResult::success(vec![
            Content::text("hi"),
            Content::Image(ImageContent::new("AAAA", "image/png")),
        ]);
        r.structured_content = Some(json!({"a": 1}));
        assert_eq!(
            parts(&r),
            [
                Part::text("hi"),
                Part::Image {
                    mime_type: "image/png".into(),
                    data: "AAAA".into()
                }
            ]
        );
        let mut only = CallToolResult::success(vec![]);
        only.structured_content = Some(json!({"sum": 5}));
        assert_eq!(parts(&only), [Part::text(r#"{"sum":5}"#)]);
        let mut err = CallToolResult::error(vec![]);
        err.structured_content = Some(json!({"sum": 5}));
        assert_eq!(parts(&err), [Part::text("(the tool returned no content)")]);
    }
}
