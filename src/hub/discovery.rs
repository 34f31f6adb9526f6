//! Server discovery: which servers a query is about, by TF cosine similarity between the query
//! and each server's `"name description"`.
//!
//! Tokenisation is the classifier gem's `String#word_hash`, ported exactly:
//! ```text
//!   words:   delete [^\w\s], split on whitespace, downcase, drop stop words and words of
//!            2 characters or fewer, Porter-stem, count
//!   symbols: replace \w with spaces, split on whitespace: every run of punctuation is a token
//!   vector:  both counts merged, L2-normalised; score = dot product, at most 1.0
//! ```

use std::collections::HashMap;

use super::porter::stem;
use crate::config::ServerConfig;

/// The classifier gem's `CORPUS_SKIP_WORDS`, checked on the lower-cased word before stemming.
const SKIP_WORDS: &[&str] = &[
    "a", "again", "all", "along", "are", "also", "an", "and", "as", "at", "but", "by", "came",
    "can", "cant", "couldnt", "did", "didn", "didnt", "do", "doesnt", "dont", "ever", "first",
    "from", "have", "her", "here", "him", "how", "i", "if", "in", "into", "is", "isnt", "it",
    "itll", "just", "last", "least", "like", "most", "my", "new", "no", "not", "now", "of", "on",
    "or", "should", "sinc", "so", "some", "th", "than", "this", "that", "the", "their", "then",
    "those", "to", "told", "too", "true", "try", "until", "url", "us", "were", "when", "whether",
    "while", "with", "within", "yes", "you", "youll",
];

/// Picks the servers a query is about.
///
/// ```
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::hub::ServerDiscovery;
/// let servers = vec![
///     ServerConfig::stdio("filesystem", "mcp-fs").with_description("Read and write files"),
///     ServerConfig::stdio("github", "mcp-github").with_description("GitHub repos and PRs"),
/// ];
/// let names = |v: Vec<ServerConfig>| v.iter().map(|s| s.name().to_owned()).collect::<Vec<_>>();
/// let pick = |q| names(ServerDiscovery::select(q, &servers, ServerDiscovery::DEFAULT_THRESHOLD));
/// assert_eq!(pick("search github repos"), ["github"]);
/// assert_eq!(pick("read and write files"), ["filesystem"]);
/// // Lexical, not semantic: "pull requests" shares no stem with "PRs", so nothing scores and
/// // every server comes back (the fallback).
/// assert_eq!(pick("list open pull requests"), ["filesystem", "github"]);
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ServerDiscovery;

impl ServerDiscovery {
    /// The default threshold: 0.05 (descriptions are short, so raw scores are small).
    pub const DEFAULT_THRESHOLD: f64 = 0.05;

    /// The servers of `from` scoring at least `threshold` against `query`, in their original
    /// order. Falls back to all of `from` when `from` is empty, the query is blank, no server
    /// has a description, or no server reaches the threshold.
    pub fn select(query: &str, from: &[ServerConfig], threshold: f64) -> Vec<ServerConfig> {
        Self::select_indices(query, from, threshold)
            .into_iter()
            .map(|i| from[i].clone())
            .collect()
    }

    /// As [`select`](Self::select), returning positions in `from`.
    pub fn select_indices(query: &str, from: &[ServerConfig], threshold: f64) -> Vec<usize> {
        let all = (0..from.len()).collect();
        if from.is_empty()
            || query.trim().is_empty()
            || from.iter().all(|s| s.description().trim().is_empty())
        {
            return all;
        }
        let q = term_vector(query);
        let picked: Vec<usize> = from
            .iter()
            .enumerate()
            .filter(|(_, s)| cosine(&q, &term_vector(&topic(s))) >= threshold)
            .map(|(i, _)| i)
            .collect();
        if picked.is_empty() {
            all
        } else {
            picked
        }
    }

    /// The score of one server for `query`: TF cosine similarity with `"name description"`.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::hub::ServerDiscovery;
    /// let brew = ServerConfig::stdio("brew", "mcp-brew")
    ///     .with_description("Install, update, and manage macOS packages via Homebrew");
    /// assert!(ServerDiscovery::score("install imagemagick", &brew) > 0.05);
    /// assert_eq!(ServerDiscovery::score("read config file", &brew), 0.0);
    /// ```
    pub fn score(query: &str, server: &ServerConfig) -> f64 {
        cosine(&term_vector(query), &term_vector(&topic(server)))
    }

    /// TF cosine similarity of two texts, in `0.0..=1.0`.
    ///
    /// ```
    /// use mcp_blocking::hub::ServerDiscovery;
    /// assert!((ServerDiscovery::similarity("reading files", "read file") - 1.0).abs() < 1e-9);
    /// assert_eq!(ServerDiscovery::similarity("", "read file"), 0.0);
    /// ```
    pub fn similarity(a: &str, b: &str) -> f64 {
        cosine(&term_vector(a), &term_vector(b))
    }
}

fn topic(server: &ServerConfig) -> String {
    format!("{} {}", server.name(), server.description())
        .trim()
        .to_owned()
}

/// Ruby's `\w` (ASCII, as the classifier gem's regexes are not Unicode-aware).
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Ruby's `\s`.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// `String#word_hash`: stemmed word counts merged with punctuation-run counts.
pub(crate) fn word_hash(text: &str) -> HashMap<String, u32> {
    let mut counts: HashMap<String, u32> = HashMap::new();
    let cleaned: String = text
        .chars()
        .filter(|&c| is_word(c) || is_space(c))
        .collect();
    for word in cleaned.split(is_space).filter(|w| !w.is_empty()) {
        let word = word.to_ascii_lowercase();
        if word.len() > 2 && !SKIP_WORDS.contains(&word.as_str()) {
            *counts.entry(stem(&word)).or_default() += 1;
        }
    }
    let symbols: String = text
        .chars()
        .map(|c| if is_word(c) { ' ' } else { c })
        .collect();
    for sym in symbols.split(is_space).filter(|w| !w.is_empty()) {
        *counts.entry(sym.to_owned()).or_default() += 1;
    }
    counts
}

/// A text's term vector, kept so that one query can be scored against many texts without
/// tokenising either again (tool search ranks every tool of a run this way).
#[derive(Debug, Clone, Default)]
pub(crate) struct Terms(HashMap<String, f64>);

impl Terms {
    /// The terms of `text`, tokenised as [`word_hash`] does.
    pub(crate) fn of(text: &str) -> Terms {
        Terms(term_vector(text))
    }

    /// TF cosine similarity with `other`, in `0.0..=1.0`.
    pub(crate) fn similarity(&self, other: &Terms) -> f64 {
        cosine(&self.0, &other.0)
    }

    /// Whether the text had no term at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The L2-normalised term vector of `text`.
fn term_vector(text: &str) -> HashMap<String, f64> {
    let counts = word_hash(text);
    let norm = counts
        .values()
        .map(|&c| f64::from(c) * f64::from(c))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 {
        return HashMap::new();
    }
    counts
        .into_iter()
        .map(|(k, c)| (k, f64::from(c) / norm))
        .collect()
}

fn cosine(a: &HashMap<String, f64>, b: &HashMap<String, f64>) -> f64 {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let dot: f64 = small
        .iter()
        .filter_map(|(k, v)| large.get(k).map(|w| v * w))
        .sum();
    dot.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(text: &str) -> Vec<(String, u32)> {
        let mut v: Vec<_> = word_hash(text).into_iter().collect();
        v.sort();
        v
    }

    fn owned(pairs: &[(&str, u32)]) -> Vec<(String, u32)> {
        let mut v: Vec<_> = pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect();
        v.sort();
        v
    }

    #[test]
    fn word_hash_matches_the_classifier_gem() {
        // Stop words and short words dropped before stemming; punctuation runs counted.
        assert_eq!(
            hash("Install, update, and manage macOS packages via Homebrew"),
            owned(&[
                ("instal", 1),
                ("updat", 1),
                ("manag", 1),
                ("maco", 1),
                ("packag", 1),
                ("via", 1),
                ("homebrew", 1),
                (",", 2),
            ])
        );
        assert_eq!(
            hash("GitHub repos and PRs"),
            owned(&[("github", 1), ("repo", 1), ("pr", 1)])
        );
        // `don't` loses its apostrophe first and becomes the stop word `dont`; "..." is one token.
        assert_eq!(
            hash("don't stop..."),
            owned(&[("stop", 1), ("'", 1), ("...", 1)])
        );
        assert_eq!(hash("   "), owned(&[]));
    }

    #[test]
    fn skip_list_is_the_gems() {
        let words = SKIP_WORDS;
        assert_eq!(words.len(), 80);
        assert!(words.contains(&"youll") && words.contains(&"sinc") && words.contains(&"url"));
    }

    fn servers3() -> Vec<ServerConfig> {
        vec![
            ServerConfig::stdio("filesystem", "x")
                .with_description("Read, write, and search local files and directories"),
            ServerConfig::stdio("github", "x")
                .with_description("GitHub repos, issues, pull requests, code search"),
            ServerConfig::stdio("brew", "x")
                .with_description("Install, update, and manage macOS packages via Homebrew"),
        ]
    }

    fn names(v: &[ServerConfig]) -> Vec<&str> {
        v.iter().map(ServerConfig::name).collect()
    }

    #[test]
    fn golden_install_imagemagick_picks_brew() {
        let s = servers3();
        let got = ServerDiscovery::select("install imagemagick", &s, 0.05);
        assert_eq!(names(&got), ["brew"]);
    }

    #[test]
    fn golden_two_server_cases() {
        let s = vec![
            ServerConfig::stdio("filesystem", "x").with_description("Read and write files"),
            ServerConfig::stdio("github", "x").with_description("GitHub repos and PRs"),
        ];
        let pick = |q| names(&ServerDiscovery::select(q, &s, 0.05)).join(",");
        assert_eq!(pick("search github repos"), "github");
        assert_eq!(pick("read and write files"), "filesystem");
        assert_eq!(pick("list open pull requests"), "filesystem,github");
    }

    #[test]
    fn fallbacks_return_everything_in_order() {
        let s = servers3();
        assert_eq!(names(&ServerDiscovery::select("", &s, 0.05)).len(), 3);
        assert_eq!(names(&ServerDiscovery::select("  \n", &s, 0.05)).len(), 3);
        assert_eq!(
            names(&ServerDiscovery::select("zzz qqq", &s, 0.05)).len(),
            3
        );
        let bare = vec![ServerConfig::stdio("a", "x"), ServerConfig::stdio("b", "x")];
        assert_eq!(
            names(&ServerDiscovery::select("a b", &bare, 0.05)),
            ["a", "b"]
        );
        assert!(ServerDiscovery::select("x", &[], 0.05).is_empty());
    }

    #[test]
    fn several_matches_keep_the_original_order() {
        let s = servers3();
        // "search" is in filesystem's and github's descriptions.
        assert_eq!(
            names(&ServerDiscovery::select("search", &s, 0.05)),
            ["filesystem", "github"]
        );
    }

    #[test]
    fn similarity_is_bounded_and_symmetric() {
        let a = "read the config file, please";
        let b = "Read, write, and search local files and directories";
        let ab = ServerDiscovery::similarity(a, b);
        assert!((ab - ServerDiscovery::similarity(b, a)).abs() < 1e-12);
        assert!(ab > 0.0 && ab <= 1.0);
        assert!(ServerDiscovery::similarity(a, a) <= 1.0);
    }
}
