//! `-o`: saving resource contents and the images, audio and blobs of a tool result to files,
//! base64-decoded.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Standard base64, padded or not, lenient about the bits after the last byte (as servers'
/// encoders differ there).
const LENIENT: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Decodes standard or URL-safe base64, padded or not, ignoring whitespace.
pub(crate) fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    // The URL-safe letters read as their standard twins, so one engine takes both alphabets.
    let standard: String = text
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    LENIENT
        .decode(standard)
        .map_err(|e| format!("not base64 ({e})"))
}

/// A file extension for a MIME type.
fn extension(mime: &str) -> &str {
    let essence = mime.split(';').next().unwrap_or("").trim();
    match essence {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "application/json" => "json",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        "text/html" => "html",
        "text/markdown" => "md",
        _ => essence
            .rsplit('/')
            .next()
            .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()))
            .unwrap_or("bin"),
    }
}

/// A safe file name from the last segment of a URI (no path separators, no leading dot).
fn name_from_uri(uri: &str) -> Option<String> {
    let last = uri
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()?;
    let clean: String = last
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = clean.trim_start_matches('.').to_owned();
    (!clean.is_empty()).then_some(clean)
}

/// The bytes of one content (a resource's contents, or an image/audio block).
fn bytes_of(content: &Value) -> Result<Option<Vec<u8>>, String> {
    if let Some(t) = content["text"].as_str() {
        return Ok(Some(t.as_bytes().to_vec()));
    }
    for key in ["blob", "data"] {
        if let Some(b) = content[key].as_str() {
            return base64_decode(b).map(Some);
        }
    }
    Ok(None)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}

/// One saved file: where, how many bytes, which MIME type.
pub(crate) struct Saved {
    pub(crate) path: PathBuf,
    pub(crate) bytes: usize,
    pub(crate) mime: String,
}

/// Saves the contents of a `resources/read` result: to `out` itself when there is one content
/// and `out` is not a directory, else one file per content inside the directory `out`.
pub(crate) fn save_contents(contents: &[Value], out: &Path) -> Result<Vec<Saved>, String> {
    let into_dir = out.is_dir() || contents.len() > 1;
    if into_dir && !out.is_dir() {
        std::fs::create_dir_all(out)
            .map_err(|e| format!("cannot create the directory `{}`: {e}", out.display()))?;
    }
    let mut saved = Vec::new();
    for (i, c) in contents.iter().enumerate() {
        let Some(bytes) = bytes_of(c)? else { continue };
        let mime = c["mimeType"].as_str().unwrap_or("").to_owned();
        let path = if into_dir {
            let name = name_from_uri(c["uri"].as_str().unwrap_or(""))
                .unwrap_or_else(|| format!("content-{}.{}", i + 1, extension(&mime)));
            out.join(name)
        } else {
            out.to_path_buf()
        };
        write(&path, &bytes)?;
        saved.push(Saved {
            path,
            bytes: bytes.len(),
            mime,
        });
    }
    Ok(saved)
}

/// Saves the images, audio and embedded blobs of a tool result (its JSON form) into `dir`, as
/// `TOOL-N.EXT`; returns the saved files by content index.
pub(crate) fn save_blocks(
    content: &[Value],
    dir: &Path,
    tool: &str,
) -> Result<Vec<(usize, Saved)>, String> {
    let binary: Vec<(usize, &Value)> = content
        .iter()
        .enumerate()
        .filter_map(|(i, b)| match b["type"].as_str() {
            Some("image" | "audio") => Some((i, b)),
            Some("resource") if b["resource"]["blob"].is_string() => Some((i, &b["resource"])),
            _ => None,
        })
        .collect();
    if binary.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the directory `{}`: {e}", dir.display()))?;
    let stem = name_from_uri(tool).unwrap_or_else(|| "content".into());
    let mut saved = Vec::new();
    for (i, block) in binary {
        let Some(bytes) = bytes_of(block)? else {
            continue;
        };
        let mime = block["mimeType"].as_str().unwrap_or("").to_owned();
        let path = dir.join(format!("{stem}-{}.{}", i + 1, extension(&mime)));
        write(&path, &bytes)?;
        saved.push((
            i,
            Saved {
                path,
                bytes: bytes.len(),
                mime,
            },
        ));
    }
    Ok(saved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_padded_unpadded_and_url_safe() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVs\nbG8h").unwrap(), b"hello!");
        assert_eq!(base64_decode("-_8=").unwrap(), [0xfb, 0xff]);
        assert!(base64_decode("a*b").is_err());
    }

    #[test]
    fn names_come_from_uris_and_mime_types() {
        assert_eq!(
            name_from_uri("test://static/resource/2").as_deref(),
            Some("2")
        );
        assert_eq!(
            name_from_uri("file:///tmp/a b.txt").as_deref(),
            Some("a_b.txt")
        );
        assert_eq!(name_from_uri("x://h/../.."), None);
        assert_eq!(extension("image/png"), "png");
        assert_eq!(extension("application/x-weird+zip"), "bin");
    }
}
