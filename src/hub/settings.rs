//! The `None | Inherit | List` settings and their resolution through the levels
//! global -> group -> host -> run. A pure function: no I/O, no state.

/// One level's say about a list of servers or of tool names.
///
/// Four levels are resolved in order, each against the value the level above it resolved to:
/// global (the [`HubBuilder`](crate::hub::HubBuilder)'s servers), group (settings shared by a
/// family of hosts), host (one host program) and run (one [`Run`](crate::hub::Run)). The most
/// specific level that says something wins.
///
/// | value | resolves to |
/// |---|---|
/// | [`Setting::None`] | an empty list, whatever the parent says |
/// | [`Setting::Inherit`] | the parent level's resolved value (the default, at every level) |
/// | [`Setting::List`] | exactly this list (an empty list is the same as `None`) |
///
/// `Inherit` against a `None` parent is an empty list. When no level says anything (all
/// `Inherit`), the result is unset: the [`Hub`](crate::Hub) reads an unset server list as "no
/// servers" and an unset tool list as "no filter: every tool". So a run that says nothing gets
/// what its host gets, and zero tools must be asked for with `None`.
///
/// ```
/// use mcp_blocking::hub::Setting;
/// let only_fs = Setting::list(["fs"]);
/// assert_eq!(only_fs, Setting::List(vec!["fs".to_string()]));
/// assert_eq!(Setting::<String>::default(), Setting::Inherit);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Setting<T> {
    /// Nothing at this level: an empty list.
    None,
    /// Take the parent level's resolved value (the default).
    #[default]
    Inherit,
    /// Exactly these items.
    List(Vec<T>),
}

impl<T> Setting<T> {
    /// A list setting from anything iterable.
    ///
    /// ```
    /// use mcp_blocking::hub::Setting;
    /// let tools: Setting<String> = Setting::list(["read_file", "write_file"]);
    /// assert_eq!(tools, Setting::List(vec!["read_file".into(), "write_file".into()]));
    /// ```
    pub fn list<I, U>(items: I) -> Self
    where
        I: IntoIterator<Item = U>,
        U: Into<T>,
    {
        Setting::List(items.into_iter().map(Into::into).collect())
    }

    /// Whether this is [`Setting::Inherit`].
    pub fn is_inherit(&self) -> bool {
        matches!(self, Setting::Inherit)
    }
}

impl<T: Clone> Setting<T> {
    /// Resolves this level against its parent's resolved value (`None` = unset).
    ///
    /// ```
    /// use mcp_blocking::hub::Setting;
    /// let parent = Some(vec![1, 2]);
    /// assert_eq!(Setting::Inherit.resolve_against(parent.as_deref()), Some(vec![1, 2]));
    /// assert_eq!(Setting::None.resolve_against(parent.as_deref()), Some(vec![]));
    /// assert_eq!(Setting::List(vec![3]).resolve_against(parent.as_deref()), Some(vec![3]));
    /// ```
    pub fn resolve_against(&self, parent: Option<&[T]>) -> Option<Vec<T>> {
        match self {
            Setting::None => Some(Vec::new()),
            Setting::Inherit => parent.map(<[T]>::to_vec),
            Setting::List(items) => Some(items.clone()),
        }
    }
}

/// Resolves `levels`, most general first (global, group, host, run): each level against the
/// one before it. `None` when every level is [`Setting::Inherit`] (unset).
///
/// See [`Setting`] for the rules and an example.
pub(crate) fn resolve_setting<T: Clone>(levels: &[&Setting<T>]) -> Option<Vec<T>> {
    let mut resolved: Option<Vec<T>> = None;
    for level in levels {
        resolved = match level {
            Setting::Inherit => resolved,
            other => other.resolve_against(None),
        };
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    type S = Setting<&'static str>;

    fn list(items: &[&'static str]) -> S {
        Setting::List(items.to_vec())
    }

    fn r(levels: [&S; 4]) -> Option<Vec<&'static str>> {
        resolve_setting(&levels)
    }

    const I: S = Setting::Inherit;
    const N: S = Setting::None;

    #[test]
    fn documented_examples() {
        let global = Setting::List(vec!["fs"]);
        assert_eq!(r([&global, &I, &I, &I]), Some(vec!["fs"]));
        assert_eq!(r([&global, &N, &I, &I]), Some(vec![]));
        assert_eq!(resolve_setting::<&str>(&[&I, &I]), None);
    }

    #[test]
    fn all_inherit_is_unset() {
        assert_eq!(r([&I, &I, &I, &I]), None);
    }

    #[test]
    fn the_most_specific_level_wins() {
        let g = list(&["g"]);
        let n = list(&["n"]);
        let h = list(&["h"]);
        let run = list(&["r"]);
        assert_eq!(r([&g, &n, &h, &run]), Some(vec!["r"]));
        assert_eq!(r([&g, &n, &h, &I]), Some(vec!["h"]));
        assert_eq!(r([&g, &n, &I, &I]), Some(vec!["n"]));
        assert_eq!(r([&g, &I, &I, &I]), Some(vec!["g"]));
    }

    #[test]
    fn inherit_skips_to_the_nearest_level_that_says_something() {
        let g = list(&["g"]);
        let h = list(&["h"]);
        assert_eq!(r([&g, &I, &h, &I]), Some(vec!["h"]));
        assert_eq!(r([&I, &I, &h, &I]), Some(vec!["h"]));
        assert_eq!(r([&I, &list(&["n"]), &I, &I]), Some(vec!["n"]));
    }

    #[test]
    fn none_at_any_level_empties_below_it_until_a_list() {
        let g = list(&["g"]);
        assert_eq!(r([&g, &N, &I, &I]), Some(vec![]));
        assert_eq!(r([&g, &I, &N, &I]), Some(vec![]));
        assert_eq!(r([&g, &I, &I, &N]), Some(vec![]));
        assert_eq!(r([&g, &N, &list(&["h"]), &I]), Some(vec!["h"]));
        assert_eq!(r([&N, &I, &I, &list(&["r"])]), Some(vec!["r"]));
    }

    #[test]
    fn inherit_against_none_is_an_empty_list_not_the_word_none() {
        // RobotLab: standalone robot, global :none, build-time tools: :inherit -> ["none"].
        assert_eq!(r([&N, &I, &I, &I]), Some(vec![]));
        assert_ne!(r([&N, &I, &I, &I]), Some(vec!["none"]));
    }

    #[test]
    fn an_empty_list_is_the_same_as_none() {
        let g = list(&["g"]);
        assert_eq!(r([&g, &I, &list(&[]), &I]), r([&g, &I, &N, &I]));
    }

    #[test]
    fn a_run_that_says_nothing_inherits() {
        // RobotLab trap: run() defaults to :none and sends zero tools; ours inherits.
        let host = list(&["github", "filesystem"]);
        assert_eq!(
            r([&I, &I, &host, &Setting::default()]),
            Some(vec!["github", "filesystem"])
        );
    }

    #[test]
    fn robotlab_cases() {
        // mcp: [...] at build, run(mcp: :inherit) -> the build list.
        let build = list(&["filesystem", "github"]);
        assert_eq!(r([&N, &I, &build, &I]), Some(vec!["filesystem", "github"]));
        // run(mcp: :none) -> nothing this turn.
        assert_eq!(r([&N, &I, &build, &N]), Some(vec![]));
        // run(mcp: [...]) overrides the build list.
        assert_eq!(r([&N, &I, &build, &list(&["s3"])]), Some(vec!["s3"]));
        // Network config: supplies the list, robot :inherit picks it up.
        let network = list(&["fs"]);
        assert_eq!(r([&N, &network, &I, &I]), Some(vec!["fs"]));
        // Robot :none inside that network -> none.
        assert_eq!(r([&N, &network, &N, &I]), Some(vec![]));
        // Global config only.
        assert_eq!(r([&list(&["global"]), &I, &I, &I]), Some(vec!["global"]));
        // Task tools: [...] arrive as the run value.
        assert_eq!(
            r([&N, &network, &I, &list(&["read_file"])]),
            Some(vec!["read_file"])
        );
    }

    /// Every combination of four levels drawn from {None, Inherit, List(level)} (81 cases),
    /// checked against the rule stated independently: the last level that is not `Inherit`
    /// decides; none such means unset.
    #[test]
    fn exhaustive_table() {
        let names = ["g", "n", "h", "r"];
        let choices = |i: usize| -> [S; 3] { [N, I, list(&[names[i]])] };
        let mut count = 0;
        for a in 0..3 {
            for b in 0..3 {
                for c in 0..3 {
                    for d in 0..3 {
                        let levels = [
                            choices(0)[a].clone(),
                            choices(1)[b].clone(),
                            choices(2)[c].clone(),
                            choices(3)[d].clone(),
                        ];
                        let expected =
                            levels
                                .iter()
                                .rev()
                                .find(|l| !l.is_inherit())
                                .map(|l| match l {
                                    Setting::List(v) => v.clone(),
                                    _ => vec![],
                                });
                        let got =
                            resolve_setting(&[&levels[0], &levels[1], &levels[2], &levels[3]]);
                        assert_eq!(got, expected, "{levels:?}");
                        count += 1;
                    }
                }
            }
        }
        assert_eq!(count, 81);
    }
}
