//! Where the REPL keeps its history file.

use std::ffi::OsString;
use std::path::PathBuf;

/// The history file: `$DEVARRAY_HISTORY`, else
/// `$XDG_STATE_HOME/devarray/history`, else `~/.local/state/devarray/history`.
/// `None` when none of these can be formed (no HOME); the REPL then keeps
/// history in memory only. `var` looks up an environment variable.
pub fn history_path(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let non_empty = |name: &str| var(name).filter(|v| !v.is_empty());
    if let Some(path) = non_empty("DEVARRAY_HISTORY") {
        return Some(PathBuf::from(path));
    }
    // The XDG spec says a relative path in these variables is invalid and is to be ignored.
    if let Some(state) = non_empty("XDG_STATE_HOME").map(PathBuf::from) {
        if state.is_absolute() {
            return Some(state.join("devarray").join("history"));
        }
    }
    non_empty("HOME").map(|home| {
        PathBuf::from(home)
            .join(".local")
            .join("state")
            .join("devarray")
            .join("history")
    })
}

/// [`history_path`] from the process environment.
pub fn default_history_path() -> Option<PathBuf> {
    history_path(|name| std::env::var_os(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn explicit_variable_wins() {
        let vars = [
            ("DEVARRAY_HISTORY", "/tmp/h"),
            ("XDG_STATE_HOME", "/s"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(history_path(env(&vars)), Some(PathBuf::from("/tmp/h")));
    }

    #[test]
    fn xdg_state_home_next() {
        let vars = [("XDG_STATE_HOME", "/s"), ("HOME", "/home/u")];
        assert_eq!(
            history_path(env(&vars)),
            Some(PathBuf::from("/s/devarray/history"))
        );
    }

    #[test]
    fn relative_xdg_and_empty_values_are_ignored() {
        let vars = [
            ("DEVARRAY_HISTORY", ""),
            ("XDG_STATE_HOME", "rel"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(
            history_path(env(&vars)),
            Some(PathBuf::from("/home/u/.local/state/devarray/history"))
        );
    }

    #[test]
    fn nothing_known_means_no_file() {
        assert_eq!(history_path(env(&[])), None);
    }
}
