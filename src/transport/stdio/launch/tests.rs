//! The Windows launch rules, checked on every platform: command resolution through `PATH` and
//! `PATHEXT` against a made-up file system, the batch-file arguments std's escaping cannot make
//! safe, the command line cmd.exe gets, the environment allow-lists, and the errors' messages.

use super::*;
use std::collections::BTreeSet;

/// A file system that holds exactly `files` (compared without regard to ASCII case, as
/// Windows does).
fn files(files: &[&str]) -> impl Fn(&Path) -> bool {
    let set: BTreeSet<String> = files.iter().map(|f| f.to_ascii_lowercase()).collect();
    move |p: &Path| set.contains(&p.to_string_lossy().to_ascii_lowercase())
}

fn resolve(
    command: &str,
    cwd: Option<&str>,
    path: Option<&str>,
    pathext: Option<&str>,
    fs: &[&str],
) -> Result<Resolved, LaunchError> {
    resolve_command(
        command,
        cwd.map(Path::new),
        path.map(OsStr::new),
        pathext.map(OsStr::new),
        &files(fs),
    )
}

fn found(path: &str, kind: Kind) -> Result<Resolved, LaunchError> {
    Ok(Resolved {
        path: PathBuf::from(path),
        kind,
    })
}

const NODE_PATH: &str = r"C:\Windows\system32;C:\Program Files\nodejs\;C:\Users\me\.local\bin";

#[test]
fn npx_is_found_as_its_cmd_shim_not_as_the_shell_script_beside_it() {
    let fs = [
        r"C:\Program Files\nodejs\npx",
        r"C:\Program Files\nodejs\npx.cmd",
        r"C:\Program Files\nodejs\npx.ps1",
    ];
    assert_eq!(
        resolve("npx", None, Some(NODE_PATH), None, &fs),
        found(r"C:\Program Files\nodejs\npx.cmd", Kind::Batch)
    );
}

#[test]
fn pathext_order_decides_within_a_directory_and_path_order_between_them() {
    let fs = [
        r"C:\Program Files\nodejs\tool.cmd",
        r"C:\Program Files\nodejs\tool.exe",
        r"C:\Users\me\.local\bin\tool.com",
    ];
    // `.EXE` comes before `.CMD` in PATHEXT: the same directory's exe wins.
    assert_eq!(
        resolve("tool", None, Some(NODE_PATH), None, &fs),
        found(r"C:\Program Files\nodejs\tool.exe", Kind::Program)
    );
    // A PATHEXT that puts `.CMD` first is followed.
    assert_eq!(
        resolve("tool", None, Some(NODE_PATH), Some(".CMD;.EXE"), &fs),
        found(r"C:\Program Files\nodejs\tool.cmd", Kind::Batch)
    );
    // An earlier directory wins over a better extension later on.
    let later = [
        r"C:\Users\me\.local\bin\uvx.exe",
        r"C:\Windows\system32\uvx.bat",
    ];
    assert_eq!(
        resolve("uvx", None, Some(NODE_PATH), None, &later),
        found(r"C:\Windows\system32\uvx.bat", Kind::Batch)
    );
}

#[test]
fn a_command_with_its_extension_is_looked_for_as_is() {
    let fs = [
        r"C:\Program Files\nodejs\node.exe",
        r"C:\Program Files\nodejs\node.exe.cmd",
        r"C:\Program Files\nodejs\npx.cmd",
    ];
    assert_eq!(
        resolve("node.exe", None, Some(NODE_PATH), None, &fs),
        found(r"C:\Program Files\nodejs\node.exe", Kind::Program)
    );
    // The extension compares without regard to case, and names the kind.
    assert_eq!(
        resolve("NPX.CMD", None, Some(NODE_PATH), None, &fs),
        found(r"C:\Program Files\nodejs\NPX.CMD", Kind::Batch)
    );
}

#[test]
fn a_dotted_name_without_an_executable_extension_gets_one_appended() {
    let fs = [r"C:\Users\me\.local\bin\python3.11.exe"];
    assert_eq!(
        resolve("python3.11", None, Some(NODE_PATH), None, &fs),
        found(r"C:\Users\me\.local\bin\python3.11.exe", Kind::Program)
    );
}

#[test]
fn path_entries_may_be_quoted_and_empty_ones_are_skipped() {
    let path = r#";"C:\Program Files\a;b";;C:\tools;"#;
    let fs = [r"C:\Program Files\a;b\srv.exe", r"C:\tools\other.exe"];
    assert_eq!(
        resolve("srv", None, Some(path), None, &fs),
        found(r"C:\Program Files\a;b\srv.exe", Kind::Program)
    );
    assert_eq!(
        resolve("other", None, Some(path), None, &fs),
        found(r"C:\tools\other.exe", Kind::Program)
    );
    assert_eq!(
        split_path(path),
        vec![r"C:\Program Files\a;b".to_owned(), r"C:\tools".to_owned()]
    );
}

#[test]
fn the_current_directory_is_not_searched() {
    // A planted `npx.cmd` in the server's working directory is not run in place of the real
    // one, and without a PATH hit nothing is found there either.
    let fs = [r"C:\project\npx.cmd", r"C:\Program Files\nodejs\npx.cmd"];
    assert_eq!(
        resolve("npx", Some(r"C:\project"), Some(NODE_PATH), None, &fs),
        found(r"C:\Program Files\nodejs\npx.cmd", Kind::Batch)
    );
    let only_planted = [r"C:\project\npx.cmd"];
    assert!(matches!(
        resolve(
            "npx",
            Some(r"C:\project"),
            Some(NODE_PATH),
            None,
            &only_planted
        ),
        Err(LaunchError::NotInPath { .. })
    ));
}

#[test]
fn pathext_defaults_when_unset_or_empty_and_ignores_what_cannot_be_started() {
    let fs = [r"C:\tools\srv.js", r"C:\tools\srv.cmd"];
    for pathext in [None, Some(""), Some(";;"), Some("junk")] {
        assert_eq!(
            resolve("srv", None, Some(r"C:\tools"), pathext, &fs),
            found(r"C:\tools\srv.cmd", Kind::Batch),
            "PATHEXT {pathext:?}"
        );
    }
    // Windows' own PATHEXT lists script extensions first sometimes: they are skipped, since
    // only a shell's file association opens them.
    assert_eq!(
        resolve("srv", None, Some(r"C:\tools"), Some(".JS;.VBS;.cmd"), &fs),
        found(r"C:\tools\srv.cmd", Kind::Batch)
    );
}

#[test]
fn a_script_extension_from_pathext_is_refused_with_a_hint() {
    let fs = [r"C:\tools\server.js"];
    let err = resolve(
        "server.js",
        None,
        Some(r"C:\tools"),
        Some(".COM;.EXE;.BAT;.CMD;.VBS;.JS"),
        &fs,
    )
    .unwrap_err();
    assert_eq!(
        err,
        LaunchError::NotAProgram {
            command: "server.js".into(),
            extension: ".JS".into()
        }
    );
    assert!(
        err.to_string().contains("make its interpreter the command"),
        "{err}"
    );
}

#[test]
fn a_command_with_a_separator_or_a_drive_is_a_path() {
    let fs = [
        r"C:\srv\bin\server.exe",
        r"C:\srv\run.cmd",
        r"D:\x\npx.cmd",
        r"C:\project\tools\npx.cmd",
        "C:/srv/fwd.bat",
    ];
    // Absolute, with and without the extension; `/` works as a separator.
    assert_eq!(
        resolve(r"C:\srv\bin\server.exe", None, Some(""), None, &fs),
        found(r"C:\srv\bin\server.exe", Kind::Program)
    );
    assert_eq!(
        resolve(r"C:\srv\run", None, None, None, &fs),
        found(r"C:\srv\run.cmd", Kind::Batch)
    );
    assert_eq!(
        resolve("C:/srv/fwd", None, None, None, &fs),
        found("C:/srv/fwd.bat", Kind::Batch)
    );
    // Relative: taken from the server's working directory, as the same config does on Unix.
    assert_eq!(
        resolve(
            r"tools\npx",
            Some(r"C:\project"),
            Some(NODE_PATH),
            None,
            &fs
        ),
        found(r"C:\project\tools\npx.cmd", Kind::Batch)
    );
    assert_eq!(
        resolve(r".\tools\npx.cmd", Some(r"C:\project\"), None, None, &fs),
        found(r"C:\project\tools\npx.cmd", Kind::Batch)
    );
    assert_eq!(
        resolve(r"./.\tools\uvx.cmd", Some(r"C:\project"), None, None, &fs),
        Err(LaunchError::NoSuchFile {
            path: r"C:\project\tools\uvx.cmd".into(),
            extensions: None
        })
    );
    // A path is never searched for in PATH.
    assert!(matches!(
        resolve(r"x\npx", None, Some(r"D:\"), None, &fs),
        Err(LaunchError::NoSuchFile { .. })
    ));
    // A drive-relative or root-relative path is left to Windows, not joined to the cwd.
    let rooted = [r"\srv\run.cmd", r"D:npx.cmd"];
    assert_eq!(
        resolve(r"\srv\run", Some(r"C:\project"), None, None, &rooted),
        found(r"\srv\run.cmd", Kind::Batch)
    );
    assert_eq!(
        resolve("D:npx", Some(r"C:\project"), None, None, &rooted),
        found("D:npx.cmd", Kind::Batch)
    );
}

#[test]
fn a_path_without_an_extension_is_tried_as_is_after_the_extensions() {
    let fs = [r"C:\bin\server", r"C:\bin\both", r"C:\bin\both.exe"];
    assert_eq!(
        resolve(r"C:\bin\server", None, None, None, &fs),
        found(r"C:\bin\server", Kind::Program)
    );
    assert_eq!(
        resolve(r"C:\bin\both", None, None, None, &fs),
        found(r"C:\bin\both.exe", Kind::Program)
    );
}

#[test]
fn trailing_dots_and_spaces_do_not_hide_a_batch_file() {
    // Windows drops them from a file name, and std decides on the name so normalised: an
    // argument std passes through cmd.exe must pass our check too.
    for name in [r"C:\x\run.cmd.", r"C:\x\run.bat ", r"C:\x\run.Cmd. . "] {
        assert_eq!(
            resolve(name, None, None, None, &[name]),
            found(name, Kind::Batch),
            "{name:?}"
        );
    }
    assert_eq!(kind_of(r"C:\x\run.cmd.exe"), Kind::Program);
    assert_eq!(kind_of(r"C:\x\cmd"), Kind::Program);
}

#[test]
fn commands_that_cannot_name_a_file_are_refused() {
    let cases = [
        ("", BadCommand::Empty),
        (r"C:\tools\", BadCommand::NoFileName),
        ("C:", BadCommand::NoFileName),
        (".", BadCommand::NoFileName),
        (r"C:\x\run.bat\.", BadCommand::NoFileName),
        ("C:/x/run.cmd/. .", BadCommand::NoFileName),
        (r"tools\..", BadCommand::NoFileName),
        ("/", BadCommand::NoFileName),
        (r#"C:\x\"npx.cmd"#, BadCommand::Character('"')),
        (r"C:\x\run.bat::$DATA", BadCommand::Character(':')),
        ("npx.cmd:stream", BadCommand::Character(':')),
        ("np\0x", BadCommand::Character('\0')),
    ];
    for (command, reason) in cases {
        assert_eq!(
            resolve(command, None, Some(r"C:\x"), None, &[]),
            Err(LaunchError::BadCommand {
                command: command.into(),
                reason
            }),
            "{command:?}"
        );
    }
}

#[test]
fn names_that_are_not_ascii_are_looked_up_without_a_panic() {
    let fs = [r"C:\ツール\日本.cmd", r"C:\ツール\é"];
    assert_eq!(
        resolve("日本", None, Some(r"C:\ツール"), None, &fs),
        found(r"C:\ツール\日本.cmd", Kind::Batch)
    );
    assert_eq!(
        resolve(r"C:\ツール\é", None, None, None, &fs),
        found(r"C:\ツール\é", Kind::Program)
    );
    for odd in ["é", "日", "ツ.", "C:é", "é:", ".日本"] {
        assert!(
            resolve(odd, None, Some("C:\\"), None, &fs).is_err(),
            "{odd:?}"
        );
    }
}

#[test]
fn not_found_messages_name_the_command_and_the_extensions_tried() {
    let err = resolve("npx", None, Some(NODE_PATH), None, &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`npx` was not found in PATH with any PATHEXT extension (.COM;.EXE;.BAT;.CMD)"
    );
    let err = resolve("npx", None, Some(NODE_PATH), Some(".exe;.Cmd;.py"), &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`npx` was not found in PATH with any PATHEXT extension (.exe;.Cmd)"
    );
    let err = resolve("npx", None, None, None, &[]).unwrap_err();
    assert_eq!(err.to_string(), "`npx` was not found: PATH is not set");
    let err = resolve(r"C:\srv\server", None, None, None, &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        r"`C:\srv\server` does not exist, with or without a PATHEXT extension (.COM;.EXE;.BAT;.CMD)"
    );
}

/// The BatBadBut cases, and what std does with them.
#[test]
fn batch_arguments_std_escapes_are_allowed() {
    let args: Vec<String> = [
        "\"&calc.exe",
        "a\"b",
        "%PATH%",
        "^",
        r"C:\dir\",
        r"a\\",
        "two words",
        "",
        "!USERNAME!",
        "a|b<c>d(e)",
        "tab\there",
        "é",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(check_batch_args(&args), Ok(()));
}

#[test]
fn batch_arguments_cmd_would_cut_short_are_refused_by_position() {
    let cases = [
        ("line\nnext", BatchArgProblem::Newline),
        ("x\r", BatchArgProblem::CarriageReturn),
        ("a\0b", BatchArgProblem::Nul),
        ("eof\x1a& calc", BatchArgProblem::CtrlZ),
    ];
    for (bad, problem) in cases {
        let args = vec!["-y".to_owned(), bad.to_owned(), "\n".to_owned()];
        assert_eq!(
            check_batch_args(&args),
            Err(LaunchError::BatchArgument { number: 2, problem }),
            "{bad:?}"
        );
    }
    let err = check_batch_args(&["a\nb".to_owned()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "argument 1 of a batch file contains a newline, which cmd.exe cannot be given safely"
    );
}

#[test]
fn the_refusal_does_not_show_the_argument() {
    // An argument may be a secret (`--token ...`): only its position is named.
    let err = check_batch_args(&["s3cr3t\nvalue".to_owned()]).unwrap_err();
    assert!(!err.to_string().contains("s3cr3t"), "{err}");
    let spawn = err.into_spawn_error("srv", "run.cmd <args>".into());
    assert!(
        !format!("{spawn} {spawn:?}").contains("s3cr3t"),
        "{spawn:?}"
    );
}

fn line(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    batch_command_line(r"C:\Program Files\nodejs\npx.cmd", &args).unwrap()
}

/// The command line std builds, argument by argument (what `make_bat_command_line` produces;
/// every expected line here was compared with what Rust 1.95's std gave a stand-in `cmd.exe`
/// under Wine).
#[test]
fn the_batch_command_line_escapes_as_std_does() {
    let head = r#"cmd.exe /e:ON /v:OFF /d /c ""C:\Program Files\nodejs\npx.cmd""#;
    assert_eq!(line(&[]), format!("{head}\""));
    let cases = [
        // Plain: letters, digits and `#$*+-./:?@\_` stay unquoted.
        ("-y", "-y"),
        (
            "@modelcontextprotocol/server-everything",
            "@modelcontextprotocol/server-everything",
        ),
        (r"C:\tmp\x_1.txt", r"C:\tmp\x_1.txt"),
        ("é", "é"),
        // Quoted: the quote doubled, so cmd.exe's quote state stays in step.
        ("\"&calc.exe", r#""""&calc.exe""#),
        ("a\"b", r#""a""b""#),
        // `%` made an empty `%cd%` substring first, so no variable is read.
        ("%PATH%", r#""%%cd:~,%PATH%%cd:~,%""#),
        ("^", r#""^""#),
        ("!USERNAME!", r#""!USERNAME!""#),
        // Backslashes doubled before a quote, the closing one included.
        (r"C:\dir\", r#""C:\dir\\""#),
        (r#"a\"b"#, r#""a\\""b""#),
        ("two words", r#""two words""#),
        ("", r#""""#),
        ("tab\there", "\"tab\there\""),
        ("%%", r#""%%cd:~,%%%cd:~,%""#),
        ("100%!", r#""100%%cd:~,%!""#),
        (r#"\\"""#, r#""\\\\""""""#),
        ("#$*+-./:?@\\_", "#$*+-./:?@\\_"),
        ("'single'", "\"'single'\""),
        ("`~=,;[]{}", "\"`~=,;[]{}\""),
        ("\x7f", "\"\x7f\""),
        ("\u{1b}[31m", "\"\u{1b}[31m\""),
        // Not ASCII and not a control character: left as is.
        ("\u{a0}nbsp", "\u{a0}nbsp"),
        ("\u{2028}ls", "\u{2028}ls"),
    ];
    for (arg, escaped) in cases {
        assert_eq!(line(&[arg]), format!("{head} {escaped}\""), "{arg:?}");
    }
    assert_eq!(
        line(&["-y", "a b", "%x"]),
        format!(r#"{head} -y "a b" "%%cd:~,%x"""#)
    );
}

#[test]
fn the_batch_command_line_refuses_what_std_refuses() {
    assert_eq!(
        batch_command_line(r"C:\x\run.cmd", &["ok".into(), "a\r\nb".into()]),
        Err(LaunchError::BatchArgument {
            number: 2,
            problem: BatchArgProblem::CarriageReturn
        })
    );
    assert!(matches!(
        batch_command_line(r#"C:\x\"run.cmd"#, &[]),
        Err(LaunchError::BadCommand {
            reason: BadCommand::Character('"'),
            ..
        })
    ));
    assert!(matches!(
        batch_command_line(r"C:\x\", &[]),
        Err(LaunchError::BadCommand {
            reason: BadCommand::NoFileName,
            ..
        })
    ));
}

#[test]
fn the_windows_list_has_what_the_sdks_and_windows_programs_need() {
    // The TypeScript SDK's win32 list (the Python SDK's is the same without PROGRAMFILES).
    let sdk = [
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    ];
    let more = [
        "WINDIR",
        "COMSPEC",
        "PATHEXT",
        "TMP",
        "PROGRAMFILES(X86)",
        "PROGRAMDATA",
        "COMMONPROGRAMFILES",
        "COMMONPROGRAMFILES(X86)",
    ];
    for name in sdk.iter().chain(&more) {
        assert!(WINDOWS_INHERITED_ENV.contains(name), "{name}");
    }
    assert_eq!(WINDOWS_INHERITED_ENV.len(), sdk.len() + more.len());
    // Nothing that commonly holds a secret or steers code loading.
    for name in ["USERDOMAIN", "LOGONSERVER", "PSMODULEPATH", "HOME", "SHELL"] {
        assert!(!WINDOWS_INHERITED_ENV.contains(&name), "{name}");
    }
}

#[test]
fn each_platform_gets_its_own_list() {
    assert_eq!(
        POSIX_INHERITED_ENV,
        ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]
    );
    if cfg!(windows) {
        assert_eq!(inherited_env(), WINDOWS_INHERITED_ENV);
    } else {
        assert_eq!(inherited_env(), POSIX_INHERITED_ENV);
    }
}

#[test]
fn a_configured_variable_overrides_the_parents_by_the_platforms_rule() {
    let env: BTreeMap<String, String> = [("Path".to_owned(), r"C:\mine".to_owned())].into();
    let parent = Some(OsString::from(r"C:\Windows"));
    // Windows: `Path` is `PATH`.
    assert_eq!(
        configured_var("PATH", &env, true),
        Some(OsString::from(r"C:\mine"))
    );
    // POSIX: they are two variables.
    assert_eq!(configured_var("PATH", &env, false), None);
    let expected = if cfg!(windows) {
        r"C:\mine"
    } else {
        r"C:\Windows"
    };
    assert_eq!(
        child_var("PATH", &env, parent.clone()),
        Some(OsString::from(expected))
    );
    assert_eq!(child_var("PATHEXT", &env, None), None);
    assert_eq!(
        child_var("PATHEXT", &BTreeMap::new(), parent.clone()),
        parent
    );
}

#[test]
fn spawn_errors_name_the_server_the_command_and_the_reason() {
    let err = resolve("npx", None, Some(NODE_PATH), None, &[]).unwrap_err();
    let spawn = err.into_spawn_error("fs", "npx -y server".into());
    assert_eq!(
        spawn.to_string(),
        "server `fs`: could not start `npx -y server`: `npx` was not found in PATH with any \
         PATHEXT extension (.COM;.EXE;.BAT;.CMD)"
    );
    match spawn {
        Error::Spawn { source, .. } => assert_eq!(source.kind(), std::io::ErrorKind::NotFound),
        other => panic!("{other:?}"),
    }
    let spawn = LaunchError::BatchArgument {
        number: 2,
        problem: BatchArgProblem::Newline,
    }
    .into_spawn_error("fs", "npx -y \"a\nb\"".into());
    assert_eq!(
        spawn.to_string(),
        "server `fs`: could not start `npx -y \"a\nb\"`: argument 2 of a batch file contains a \
         newline, which cmd.exe cannot be given safely"
    );
    match spawn {
        Error::Spawn { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput)
        }
        other => panic!("{other:?}"),
    }
}
