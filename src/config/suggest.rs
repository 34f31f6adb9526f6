//! "Did you mean" suggestions: the nearest candidate by Damerau-Levenshtein distance.

/// The optimal-string-alignment distance between `a` and `b`, ignoring ASCII case.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

/// The candidate nearest to `word`, when it is near enough to be a plausible typo.
pub(crate) fn nearest<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = distance(word, c);
        let limit = (c.chars().count() / 3).max(2);
        let better = match best {
            Some((bd, _)) => d < bd,
            None => true,
        };
        if d <= limit && better {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typo_finds_the_key() {
        assert_eq!(
            nearest("comand", ["command", "args", "env"]).as_deref(),
            Some("command")
        );
        assert_eq!(
            nearest("streamable_http", ["stdio", "streamable-http"]).as_deref(),
            Some("streamable-http")
        );
    }

    #[test]
    fn transposition_counts_once() {
        assert_eq!(distance("agrs", "args"), 1);
    }

    #[test]
    fn far_words_get_nothing() {
        assert_eq!(nearest("zzzzzz", ["command", "args"]), None);
    }
}
