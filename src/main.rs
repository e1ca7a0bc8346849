//! The `skewjoin` binary: parse the arguments (the commands are in `cli/`), run the command,
//! print its output. Errors are one line on stderr (JSON with `--format json`) and exit code 2,
//! or 3 for a bug in skewjoin; verify's difference is 1.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;

/// glibc's malloc maps each buffer above 128 KB on its own and unmaps it when freed, grows its
/// heaps a little at a time and gives freed memory back: each of those takes the process's
/// memory-map lock for writing, and two threads reading footers or column chunks then wait on
/// each other's page faults. Grow in large steps (address space only: pages are still touched
/// one at a time) and keep freed memory for reuse: the footers open faster for a little more
/// peak memory (BENCHMARKS.md, "The allocator's settings").
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any thread is started.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
        // Buffers under 4 MB (column chunks, dictionaries, footers) from the heap, not each
        // from its own mapping; larger tables still come zeroed from the kernel.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
    }
}

fn main() -> ExitCode {
    tune_malloc();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            let msg = one_line(&e.render().to_string());
            report(&msg, "usage", skewjoin::error::Kind::Usage);
            return ExitCode::from(2);
        }
    };
    // A panic is a bug in skewjoin: one line and the internal fault's exit code, not a trace.
    let ran = skewjoin::guard::no_panic_anywhere(|| cli.run()).unwrap_or_else(|panic| {
        Err(skewjoin::Error::Internal(format!("skewjoin stopped on a bug: {panic}")))
    });
    match ran {
        Ok((out, same)) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error.
            let _ = stdout.write_all(out.as_bytes());
            if same {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            // No secret of the environment in a message, whatever a server or library put in it.
            let msg = skewjoin::table::store::redact(&one_line(&e.to_string()));
            report(&msg, e.code(), e.kind());
            ExitCode::from(e.exit_code())
        }
    }
}

/// A failure on stderr: one line of text, or with `--format json` the failure's JSON (its
/// code and kind for a script, the message for a person).
fn report(msg: &str, code: &str, kind: skewjoin::error::Kind) {
    if wants_json(std::env::args_os()) {
        eprintln!("{}", skewjoin::error::failure_json(code, kind, msg));
    } else {
        eprintln!("skewjoin: error: {msg}");
    }
}

/// Whether the command line asks for JSON (`--format json` or `--format=json`): read from the
/// words themselves, so that an argument clap rejects still gets its failure as JSON.
fn wants_json(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    // Not every argument is UTF-8 (a path): compare the words, never convert them.
    let args: Vec<std::ffi::OsString> = args.collect();
    args.iter().enumerate().any(|(i, a)| {
        a == "--format=json" || (a == "--format" && args.get(i + 1).is_some_and(|v| v == "json"))
    })
}

/// Clap's multi-line message as one line: no usage block, no "For more information".
fn one_line(msg: &str) -> String {
    msg.lines()
        .map(|l| l.trim())
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join(" ")
}
