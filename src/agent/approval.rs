//! Whether a tool call may run: what the [`Agent::approve`](super::Agent::approve) hook is
//! asked ([`ToolApproval`]), what it answers ([`ApprovalDecision`]), and what happens without a
//! hook.
//!
//! | the server's policy ([`Approval`]) | hook set | no hook |
//! |---|---|---|
//! | `Unset` (the file says nothing) | asked, `required: false` | runs |
//! | `All` (Gemini's `trust: true`) | asked, `required: false` | runs |
//! | `Tools(list)`, the tool listed (`alwaysAllow`) | asked, `required: false` | runs |
//! | `Tools(list)`, the tool not listed | asked, `required: true` | refused: the model is told it needs the user's approval |
//!
//! A hosted server's approval request (OpenAI Responses `require_approval`) is asked with
//! `hosted: true, required: true`, and declined without a hook.

use serde_json::Value;

use crate::config::{RuleSource, ServerPolicy};

/// What the approval hook is asked about: a local tool call, or a hosted server's call (OpenAI
/// Responses `require_approval`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolApproval {
    /// The server (for a hosted call: its `server_label`).
    pub server: String,
    /// The tool's name on that server.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
    /// Whether the call is a hosted server's (run by the model's provider).
    pub hosted: bool,
    /// Whether the call needs the user's approval: the server's
    /// [policy](crate::config::ServerPolicy) lists the tools that run without asking (Cline's
    /// `alwaysAllow`, `autoApprove`) and this one is not among them, or lists it among those
    /// that need approval (Codex's `approval_mode = "prompt"`), or a hosted server asked for
    /// approval. `false` when the policy says nothing about approvals, trusts the server
    /// (Gemini's `trust: true`) or lists the tool: a program that only asks when the file asks
    /// approves those at once.
    pub required: bool,
    /// Where the rule that requires the approval was written (the file and key path of
    /// `alwaysAllow`, ...), when a server's policy requires it.
    pub rule: Option<RuleSource>,
}

impl ToolApproval {
    /// A local call of `tool` on `server`, with what its server's `policy` says about
    /// approving it, as the agent asks the hook about it (for testing a hook).
    pub fn new(server: &str, tool: &str, arguments: Value, policy: Option<&ServerPolicy>) -> Self {
        let required = policy.is_some_and(|p| p.needs_approval(tool));
        ToolApproval {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
            hosted: false,
            required,
            rule: policy
                .filter(|_| required)
                .map(|p| p.approval_source().clone()),
        }
    }

    /// A hosted server's approval request.
    pub(crate) fn hosted(server: &str, tool: &str, arguments: Value) -> Self {
        ToolApproval {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
            hosted: true,
            required: true,
            rule: None,
        }
    }

    /// What the model is told when a call that needs approval is refused because nobody could
    /// be asked (no hook).
    pub fn unapproved_text(&self) -> String {
        let rule = match &self.rule {
            Some(r) if !r.key.is_empty() || r.file.is_some() => format!(" ({r})"),
            _ => String::new(),
        };
        format!(
            "Not run: the tool `{}` of server `{}` needs the user's approval before it runs: \
             its configuration lists the tools that run without asking{rule}, and this one is \
             not among them. No one could be asked, so the call was refused. Tell the user; do \
             not call it again in this run.",
            self.tool, self.server
        )
    }
}

/// The approval hook's answer. A hook may return a `bool` (`true` approves).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// The call runs.
    Approve,
    /// The call does not run; the model is told the user declined it.
    Decline,
    /// The call does not run; the model is told this text (why, and what the user can do).
    DeclineWith(String),
}

impl From<bool> for ApprovalDecision {
    fn from(approve: bool) -> Self {
        if approve {
            ApprovalDecision::Approve
        } else {
            ApprovalDecision::Decline
        }
    }
}

impl ApprovalDecision {
    /// Whether the call runs.
    pub fn is_approved(&self) -> bool {
        matches!(self, ApprovalDecision::Approve)
    }
}

/// The decision for `ask` when the program set no hook: a call that needs approval is refused
/// (fail closed), any other runs.
pub(crate) fn without_hook(ask: &ToolApproval) -> ApprovalDecision {
    if ask.required {
        ApprovalDecision::DeclineWith(ask.unapproved_text())
    } else {
        ApprovalDecision::Approve
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Approval;
    use serde_json::json;
    use std::path::Path;

    fn policy(approval: Approval) -> ServerPolicy {
        ServerPolicy::new()
            .with_approval(approval)
            .with_approval_source(RuleSource::key("mcpServers.fs.alwaysAllow"))
            .with_file(Path::new("cline.json"))
    }

    #[test]
    fn only_a_tool_left_out_of_an_auto_approve_list_needs_approval() {
        let listed = policy(Approval::Tools(vec!["read_*".into()]));
        let ask =
            |p: Option<&ServerPolicy>, tool: &str| ToolApproval::new("fs", tool, json!({}), p);
        let write = ask(Some(&listed), "write_file");
        assert!(write.required);
        assert_eq!(
            write.rule.as_ref().map(|r| r.key.as_str()),
            Some("mcpServers.fs.alwaysAllow")
        );
        assert!(!ask(Some(&listed), "read_file").required);
        assert!(ask(Some(&listed), "read_file").rule.is_none());
        assert!(!ask(Some(&policy(Approval::All)), "write_file").required);
        assert!(!ask(Some(&policy(Approval::Unset)), "write_file").required);
        assert!(!ask(None, "write_file").required);
    }

    #[test]
    fn without_a_hook_a_call_that_needs_approval_is_refused_naming_the_rule() {
        let listed = policy(Approval::Tools(vec!["read_file".into()]));
        let ask = ToolApproval::new("fs", "write_file", json!({}), Some(&listed));
        match without_hook(&ask) {
            ApprovalDecision::DeclineWith(text) => {
                assert!(text.contains("`write_file` of server `fs` needs the user's approval"));
                assert!(
                    text.contains("`mcpServers.fs.alwaysAllow` in cline.json"),
                    "{text}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let read = ToolApproval::new("fs", "read_file", json!({}), Some(&listed));
        assert_eq!(without_hook(&read), ApprovalDecision::Approve);
        assert!(ApprovalDecision::from(true).is_approved());
        assert_eq!(ApprovalDecision::from(false), ApprovalDecision::Decline);
    }
}
