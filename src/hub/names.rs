//! Tool names LLM APIs accept: `^[a-zA-Z0-9_-]{1,64}$` (OpenAI Chat Completions and Responses,
//! Anthropic Messages). MCP allows 1–128 characters, dots and more, so a name that breaks the
//! rule is sanitised (every other character becomes `_`) and, when it is still too long or the
//! result is already taken, shortened and given a stable 8-hex suffix: a 32-bit FNV-1a hash of the
//! server and the server's own tool name. The same servers and tools give the same names on every
//! run and every machine.

/// The longest name the APIs take.
pub(crate) const MAX_NAME: usize = 64;

/// The length of `_` plus the 8-hex suffix.
const SUFFIX: usize = 9;

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn is_api_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME && name.bytes().all(allowed)
}

fn allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `name` with every character outside `[a-zA-Z0-9_-]` replaced by `_` (one `_` per character,
/// however many bytes it takes).
pub(crate) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii() && allowed(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a (64-bit) folded to 32 bits.
pub(crate) fn fnv1a32(parts: &[&[u8]]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            // A separator no name contains, so ("ab", "c") and ("a", "bc") differ.
            h ^= 0xff;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    (h ^ (h >> 32)) as u32
}

/// `base` (already sanitised) cut so that `_` and the 8-hex hash of (`server`, `tool`, `salt`)
/// fit in [`MAX_NAME`].
pub(crate) fn hashed(base: &str, server: &str, tool: &str, salt: u32) -> String {
    let salt_text = salt.to_string();
    let mut parts: Vec<&[u8]> = vec![server.as_bytes(), tool.as_bytes()];
    if salt > 0 {
        parts.push(salt_text.as_bytes());
    }
    let hash = fnv1a32(&parts);
    // `base` is ASCII, so any byte index is a character boundary.
    let keep = base.len().min(MAX_NAME - SUFFIX);
    let base = base[..keep].trim_end_matches('_');
    let base = if base.is_empty() { "tool" } else { base };
    format!("{base}_{hash:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_are_recognised() {
        assert!(is_api_name("echo"));
        assert!(is_api_name("a-b_C9"));
        assert!(is_api_name(&"x".repeat(64)));
        assert!(!is_api_name(&"x".repeat(65)));
        assert!(!is_api_name(""));
        assert!(!is_api_name("files.read"));
        assert!(!is_api_name("é"));
    }

    #[test]
    fn sanitising_replaces_each_character_once() {
        assert_eq!(sanitize("files.read"), "files_read");
        assert_eq!(sanitize("héllo wörld"), "h_llo_w_rld");
        assert_eq!(sanitize("a-b_c"), "a-b_c");
    }

    #[test]
    fn the_hash_is_fixed_for_a_given_input() {
        // FNV-1a is a fixed function: these values must never change, or names would change
        // between versions.
        assert_eq!(fnv1a32(&[b""]), fnv1a32(&[b""]));
        assert_eq!(format!("{:08x}", fnv1a32(&[b"a", b"echo"])), "ae628a9d");
        assert_ne!(fnv1a32(&[b"ab", b"c"]), fnv1a32(&[b"a", b"bc"]));
    }

    #[test]
    fn hashed_names_fit() {
        let long = "x".repeat(200);
        let n = hashed(&long, "s", &long, 0);
        assert_eq!(n.len(), 64);
        assert!(is_api_name(&n));
        assert_ne!(n, hashed(&long, "s", &long, 1));
        assert!(hashed("", "s", "", 0).starts_with("tool_"));
    }
}
