//! Graceful degradation of hosted MCP servers (servers the model's API calls itself, sent as
//! `{"type": "mcp"}` tools), as @robojs/ai does it:
//!
//! ```text
//!   request with every hosted server ──ok──> answer
//!     └─ failed, and the failure is the hosted servers' (see `implicated`)
//!          ──(extra_retries times: wait base·2^i, at most max_delay)──> the same request again
//!             └─ still failing ──graceful──> the implicated servers removed, a status note
//!                  appended to this request's system prompt, sent again (again for any other
//!                  server a later failure names) ──ok──> answer + degraded_mcp_servers
//!                                    not graceful ──> the last error
//!     └─ failed for another reason (a bad key, the model's own rate limit) ──> the error
//! ```
//!
//! The note and the removal hold for this request only: the next request (the next turn, or
//! the next run) carries every hosted server again, so a server that recovers is used again.

use std::time::Duration;

use super::openai_responses::OpenAiResponses;
use super::types::{ModelError, ModelRequest, ModelResponse};
use crate::config::HostedMcpServer;
use crate::hub::Degradation;

/// The status note added to the system prompt of a request sent without `labels`.
///
/// ```text
/// Status note: the external tools of these hosted MCP servers are unavailable right now and
/// were removed from this request: `docs`, `search`. Do not try to use them; if the user needs
/// them, say that they are unavailable.
/// ```
pub(crate) fn status_note(labels: &[String]) -> String {
    let names: Vec<String> = labels.iter().map(|l| format!("`{l}`")).collect();
    format!(
        "Status note: the external tools of these hosted MCP servers are unavailable right now \
         and were removed from this request: {}. Do not try to use them; if the user needs \
         them, say that they are unavailable.",
        names.join(", ")
    )
}

/// The hosted servers a failed request's error blames, or `None` when the failure is not
/// theirs.
///
/// An error status whose message names servers (by label, or by their URL's host) blames
/// those; one that names none blames them all when it is about MCP (HTTP 424 Failed
/// Dependency, which OpenAI answers when it cannot reach a hosted server, or a message that
/// mentions MCP). Anything else (a bad key, a rate limit, an unreachable endpoint, a timeout)
/// is the request's own failure: degrading would not help.
pub(crate) fn implicated(error: &ModelError, hosted: &[HostedMcpServer]) -> Option<Vec<String>> {
    let ModelError::Status {
        status, message, ..
    } = error
    else {
        return None;
    };
    if hosted.is_empty() {
        return None;
    }
    let named: Vec<String> = hosted
        .iter()
        .filter(|s| {
            names_word(message, &s.server_label)
                || crate::url::origin(&s.server_url)
                    .is_some_and(|(_, host, _)| !host.is_empty() && names_word(message, &host))
        })
        .map(|s| s.server_label.clone())
        .collect();
    if !named.is_empty() {
        return Some(named);
    }
    let about_mcp = *status == 424 || names_word(&message.to_ascii_lowercase(), "mcp");
    about_mcp.then(|| hosted.iter().map(|s| s.server_label.clone()).collect())
}

/// Whether `text` holds `word` with no letter, digit, `_` or `-` on either side (so the label
/// `docs` is not found in `mydocs` or `docs-v2`).
fn names_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let part_of_name = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name) {
            return true;
        }
        from = start + word.len().max(1);
        // `find` returns char boundaries and `word` is whole chars, so `from` is one too.
    }
    false
}

/// Waits `wait` unless the request's cancel handle fires first.
fn pause(request: &ModelRequest, wait: Duration, endpoint: &str) -> Result<(), ModelError> {
    if super::cancel::CancelHandle::pause(request.cancel.as_ref(), wait) {
        return Err(ModelError::Cancelled {
            endpoint: endpoint.to_owned(),
        });
    }
    Ok(())
}

/// Sends `request` through `model` with its hosted servers, degrading them as
/// [`OpenAiResponses::degradation`] says.
pub(crate) fn complete(
    model: &OpenAiResponses,
    request: &ModelRequest,
) -> Result<ModelResponse, ModelError> {
    let hosted = model.hosted_servers();
    let policy: &Degradation = model.degradation_policy();
    let first = match model.send(request, hosted) {
        Ok(r) => return Ok(r),
        Err(e) => e,
    };
    let Some(mut blamed) = implicated(&first, hosted) else {
        return Err(first);
    };
    let endpoint = model.endpoint_shown();
    let mut last = first;
    for retry in 0..policy.extra_retries {
        // A policy set in code is not validated as a file's is: its delays are cut to the
        // longest any wait of the crate may be.
        let wait = policy.delay(retry).min(crate::config::MAX_TIMEOUT);
        log::info!(
            "model `{endpoint}`: the request failed because of hosted MCP servers ({}); retry {} \
             of {} in {wait:?}: {last}",
            blamed.join(", "),
            retry + 1,
            policy.extra_retries
        );
        pause(request, wait, &endpoint)?;
        match model.send(request, hosted) {
            Ok(r) => return Ok(r),
            Err(e) => match implicated(&e, hosted) {
                Some(b) => {
                    blamed = b;
                    last = e;
                }
                None => return Err(e),
            },
        }
    }
    if !policy.graceful {
        return Err(last);
    }
    // Degrade: leave the blamed servers out, tell the model, and try again; a server another
    // failure names is left out too, so at most one request per hosted server is made here.
    let mut degraded: Vec<String> = Vec::new();
    loop {
        for label in blamed {
            if !degraded.contains(&label) {
                degraded.push(label);
            }
        }
        let kept: Vec<HostedMcpServer> = hosted
            .iter()
            .filter(|s| !degraded.contains(&s.server_label))
            .cloned()
            .collect();
        log::warn!(
            "model `{endpoint}`: hosted MCP servers {} kept failing the request; sending it \
             without them: {last}",
            degraded.join(", ")
        );
        let mut reduced = request.clone();
        let note = status_note(&degraded);
        reduced.system = Some(match request.system.as_deref().filter(|s| !s.is_empty()) {
            Some(system) => format!("{system}\n\n{note}"),
            None => note,
        });
        match model.send(&reduced, &kept) {
            Ok(mut r) => {
                r.degraded_mcp_servers = degraded;
                return Ok(r);
            }
            Err(e) => match implicated(&e, &kept) {
                Some(b) if !kept.is_empty() => {
                    blamed = b;
                    last = e;
                }
                _ => return Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, message: &str) -> ModelError {
        ModelError::Status {
            endpoint: "e".into(),
            status,
            message: message.into(),
        }
    }

    #[test]
    fn the_servers_an_error_names_are_blamed() {
        let hosted = [
            HostedMcpServer::new("docs", "https://docs.example.com/mcp"),
            HostedMcpServer::new("search", "https://s.example.net/mcp"),
        ];
        let blamed = |e| implicated(&e, &hosted);
        assert_eq!(
            blamed(status(
                424,
                "Error retrieving tool list from MCP server: 'docs'. Http status code: 503"
            )),
            Some(vec!["docs".to_owned()])
        );
        assert_eq!(
            blamed(status(400, "could not reach s.example.net")),
            Some(vec!["search".to_owned()])
        );
        // Named by neither, but about MCP: all of them.
        let all = Some(vec!["docs".to_owned(), "search".to_owned()]);
        assert_eq!(blamed(status(424, "Failed Dependency")), all);
        assert_eq!(blamed(status(500, "MCP tool listing failed")), all);
        // Not theirs: a bad key, a rate limit, a label inside another word.
        assert_eq!(blamed(status(401, "Incorrect API key provided")), None);
        assert_eq!(blamed(status(429, "Rate limit reached")), None);
        assert_eq!(blamed(status(400, "mydocs and docs-v2 are unknown")), None);
        assert_eq!(
            blamed(ModelError::Transport {
                endpoint: "e".into(),
                detail: "docs".into()
            }),
            None
        );
        assert_eq!(implicated(&status(424, "docs"), &[]), None);
    }

    #[test]
    fn words_are_found_whole() {
        assert!(names_word("server 'docs' failed", "docs"));
        assert!(names_word("docs", "docs"));
        assert!(!names_word("mydocs", "docs"));
        assert!(!names_word("docs_2", "docs"));
        assert!(names_word("é docs é", "docs"));
        assert!(names_word("xdocs docs", "docs"));
        assert!(!names_word("anything", ""));
    }

    #[test]
    fn the_note_names_each_server() {
        assert_eq!(
            status_note(&["docs".into(), "search".into()]),
            "Status note: the external tools of these hosted MCP servers are unavailable right \
             now and were removed from this request: `docs`, `search`. Do not try to use them; \
             if the user needs them, say that they are unavailable."
        );
    }
}
