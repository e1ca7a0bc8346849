//! The command line: one file per command, each holding its arguments (with their help) and
//! its run function; the flags two or more commands share are defined once, in `flags`.

mod diagnose;
mod fix;
mod flags;
mod keys;
mod plan;
mod progress;
mod rewrite;
mod verify;

use clap::{Parser, Subcommand};

use skewjoin::Result;

#[derive(Parser)]
#[command(
    name = "skewjoin",
    version,
    about = "Find the hot keys that make a Spark join slow, and take them out of the shuffle"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Keys(keys::KeysArgs),
    Plan(plan::PlanArgs),
    Rewrite(rewrite::RewriteArgs),
    Verify(verify::VerifyArgs),
    Diagnose(diagnose::DiagnoseArgs),
    Fix(fix::FixArgs),
}

impl Cli {
    /// Runs the command: its output, and false when verify found a difference (exit code 1).
    pub fn run(self) -> Result<(String, bool)> {
        match self.command {
            Command::Keys(a) => keys::run(a).map(|o| (o, true)),
            Command::Plan(a) => plan::run(a).map(|o| (o, true)),
            Command::Rewrite(a) => rewrite::run(a).map(|o| (o, true)),
            Command::Verify(a) => verify::run(a),
            Command::Diagnose(a) => diagnose::run(a).map(|o| (o, true)),
            Command::Fix(a) => fix::run(a),
        }
    }
}
