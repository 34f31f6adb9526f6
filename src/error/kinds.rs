//! The kinds of the [`Error`](super::Error) variants whose `detail` alone would leave a
//! program to read text: what it can match on instead.

/// What was wrong with what the server sent, for [`Error::Protocol`](super::Error::Protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolErrorKind {
    /// A message or result that does not parse as what the method returns.
    Malformed,
    /// A message larger than
    /// [`Limits::max_message_bytes`](crate::config::Limits::max_message_bytes), discarded.
    TooLarge,
    /// More of something than a cap of [`Limits`](crate::config::Limits) allows: tasks
    /// listed ([`max_listed_tasks`](crate::config::Limits::max_listed_tasks)), input rounds
    /// ([`max_input_rounds`](crate::config::Limits::max_input_rounds)).
    TooMany,
    /// A well-formed answer the protocol does not allow here: a task that was not asked for,
    /// input asked for by a method that may not, an unknown result type, a repeated cursor, a
    /// reply without the response, a completed task without its result.
    Unexpected,
    /// The exchange ended before its answer came (a stream closed, a wait given up).
    Ended,
    /// Anything else (the client could not do its part, e.g. start a thread); the detail says
    /// what.
    Other,
}

/// What was wrong with an argument, for
/// [`Error::InvalidArgument`](super::Error::InvalidArgument).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidArgumentKind {
    /// A value of the wrong JSON type: tool or prompt arguments that are not an object, a
    /// prompt argument that is not a string.
    WrongType,
    /// A value out of its range (a [`CallOptions`](crate::CallOptions) timeout).
    OutOfRange,
    /// A name that nothing answers to (a tool no connected server offers).
    UnknownName,
    /// A name that several things answer to (a skill that more than one of a Hub's servers
    /// lists); nothing was done.
    Ambiguous,
    /// Bytes that are not the text they must be (a WebSocket frame that is not UTF-8).
    NotText,
}

/// Why a skill or one of its files was refused, for [`Error::Skill`](super::Error::Skill).
/// Whatever the kind, none of the refused content is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillErrorKind {
    /// The server lists no skill with this URI or name.
    NotFound,
    /// The URI is not one of the skill's listed files.
    Unlisted,
    /// What was read is not as long as the listed size.
    SizeMismatch,
    /// What was read does not have the listed digest.
    DigestMismatch,
    /// The `SKILL.md` frontmatter differs from the listed entry's, or is missing or not a
    /// mapping.
    FrontmatterMismatch,
    /// Nothing to verify against: the skill lists its files as `"dynamic"`, or a digest is not
    /// `sha256:` with 64 hex digits, or the read returned no contents for the URI.
    Unverifiable,
    /// More than a cap of [`SkillLimits`](crate::SkillLimits) allows: files in a skill,
    /// bytes in a file or in a whole skill; or more of a skill's text than an
    /// [`Agent`](crate::agent::Agent) puts in its system prompt (see
    /// [`Agent::add_skill`](crate::agent::Agent::add_skill)).
    TooLarge,
}
