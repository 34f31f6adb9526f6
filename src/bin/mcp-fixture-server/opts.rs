//! Command-line flags (see the table in `main.rs`).

#[derive(Default)]
pub(crate) struct Opts {
    pub(crate) protocol_version: Option<String>,
    pub(crate) page_size: usize,
    pub(crate) extra_tools: usize,
    pub(crate) noise: bool,
    pub(crate) ignore_sigterm: bool,
    pub(crate) spawn_grandchild: bool,
    pub(crate) crash_on_start: bool,
    pub(crate) never_answer: bool,
    pub(crate) exit_on_initialized: bool,
    pub(crate) stderr_banner: bool,
    pub(crate) verbose: bool,
    pub(crate) sleep: Option<u64>,
}

fn usage_exit(msg: &str) -> ! {
    eprintln!("fixture: {msg}");
    eprintln!(
        "usage: mcp-fixture-server [--protocol-version V] [--page-size N] [--extra-tools N] \
         [--noise] [--ignore-sigterm] [--spawn-grandchild] [--crash-on-start] [--never-answer] \
         [--exit-on-initialized] [--stderr-banner] [--verbose] [--sleep SECS]"
    );
    std::process::exit(64);
}

pub(crate) fn parse_opts() -> Opts {
    let mut opts = Opts::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> String {
            args.next()
                .unwrap_or_else(|| usage_exit(&format!("{name} needs a value")))
        };
        let number = |name: &str, v: String| -> u64 {
            v.parse()
                .unwrap_or_else(|_| usage_exit(&format!("{name}: not a number: {v}")))
        };
        match arg.as_str() {
            "--protocol-version" => opts.protocol_version = Some(value(&arg)),
            "--page-size" => opts.page_size = number(&arg, value(&arg)) as usize,
            "--extra-tools" => opts.extra_tools = number(&arg, value(&arg)) as usize,
            "--sleep" => opts.sleep = Some(number(&arg, value(&arg))),
            "--noise" => opts.noise = true,
            "--ignore-sigterm" => opts.ignore_sigterm = true,
            "--spawn-grandchild" => opts.spawn_grandchild = true,
            "--crash-on-start" => opts.crash_on_start = true,
            "--never-answer" => opts.never_answer = true,
            "--exit-on-initialized" => opts.exit_on_initialized = true,
            "--stderr-banner" => opts.stderr_banner = true,
            "--verbose" => opts.verbose = true,
            "-h" | "--help" => usage_exit("MCP fixture server (see the source's doc comment)"),
            other => usage_exit(&format!("unknown argument: {other}")),
        }
    }
    opts
}
