//! The probe's module: `skewjoin_pyo3_probe.run(argv) -> (output, exit_code)`, the command
//! line run in the calling process (the same `src/cli` as the binary).

#[path = "../../../src/cli/mod.rs"]
mod cli;

use clap::Parser;
use pyo3::prelude::*;

#[pyfunction]
fn run(argv: Vec<String>) -> (String, i32) {
    let args = std::iter::once("skewjoin".to_string()).chain(argv);
    match cli::Cli::try_parse_from(args) {
        Err(e) => (e.to_string(), 2),
        Ok(c) => match c.run() {
            Ok((out, same)) => (out, if same { 0 } else { 1 }),
            Err(e) => (e.to_string(), 2),
        },
    }
}

#[pymodule]
fn skewjoin_pyo3_probe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)
}
