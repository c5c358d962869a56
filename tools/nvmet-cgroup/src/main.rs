// SPDX-License-Identifier: GPL-2.0
//! nvmet-cgroup: bind nvmet namespaces to cgroups and set their io limits.

mod apply;
mod bind;
mod cgroupfs;
mod cli;
mod config;
mod configfs;
mod device;
#[cfg(debug_assertions)]
mod devmap;
mod devnum;
mod limits;
mod man;
mod module;
mod nvmectrl;
mod paths;
mod restore;
mod save;
mod status;
mod sysio;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::error::ErrorKind;
use clap::Parser;

use crate::cli::{Cli, Command};
use crate::device::{DevLookup, StatLookup};
use crate::paths::Roots;

/// One error line on stderr: `nvmet-cgroup: error: ...`.
pub fn print_error(msg: &str) {
    let one_line = msg.replace('\n', " ");
    let _ = writeln!(std::io::stderr(), "nvmet-cgroup: error: {one_line}");
}

/// The roots and device lookup a debug build's hidden options point at
/// (fixture trees in tests).
#[cfg(debug_assertions)]
fn environment(cli: &Cli) -> Result<(Roots, Box<dyn DevLookup>)> {
    let lookup: Box<dyn DevLookup> = match &cli.roots.dev_map {
        Some(f) => Box::new(devmap::MapLookup::load(f)?),
        None => Box::new(StatLookup),
    };
    Ok((cli.roots.roots(), lookup))
}

/// The real mount points and `stat(2)`: a release build has nothing else.
#[cfg(not(debug_assertions))]
fn environment(_cli: &Cli) -> Result<(Roots, Box<dyn DevLookup>)> {
    Ok((Roots::default(), Box::new(StatLookup)))
}

fn run(cli: &Cli, out: &mut Vec<u8>) -> Result<()> {
    let (roots, lookup) = environment(cli)?;
    let systemd = cgroupfs::Systemctl;
    let attrs = sysio::Files;
    let mut text = String::new();
    let res = match &cli.command {
        Command::Bind(a) => bind::bind(&roots, &systemd, &attrs, a, &mut text),
        Command::Unbind(a) => bind::unbind(&roots, &attrs, a, &mut text),
        Command::Limit(a) => apply::limit(&roots, lookup.as_ref(), &systemd, a, &mut text),
        Command::Status(a) => status::status(&roots, lookup.as_ref(), a, &mut text),
        Command::Save(a) => save::save(&roots, lookup.as_ref(), &a.file, a.force, &mut text),
        Command::Restore(a) => restore::restore(
            &roots,
            lookup.as_ref(),
            &systemd,
            &attrs,
            &a.file,
            !a.no_reenable,
            &mut text,
        ),
        Command::Man => man::render(out),
    };
    out.extend_from_slice(text.as_bytes());
    res
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print();
                return ExitCode::from(2);
            }
            // clap's message without the usage and hint that follow it,
            // on one line.
            let text = e.to_string();
            let end = ["\nUsage:", "\nFor more information"]
                .iter()
                .filter_map(|m| text.find(m))
                .min()
                .unwrap_or(text.len());
            let joined = text[..end].split_whitespace().collect::<Vec<_>>().join(" ");
            let first = joined.strip_prefix("error: ").unwrap_or(&joined);
            print_error(&format!("{first} (see nvmet-cgroup --help)"));
            return ExitCode::from(2);
        }
    };
    let mut out = Vec::new();
    let res = run(&cli, &mut out);
    // Output first (a restore reports what it did before the final error).
    // A reader that went away (`| head`) is its own business; any other
    // write error (a full disk) fails the command.
    let mut stdout = std::io::stdout();
    let written = stdout.write_all(&out).and_then(|()| stdout.flush());
    let write_failed = match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            print_error(&format!("writing to standard output: {e}"));
            true
        }
        _ => false,
    };
    match res {
        Ok(()) if !write_failed => ExitCode::SUCCESS,
        Ok(()) => ExitCode::FAILURE,
        Err(e) => {
            print_error(&format!("{e:#}"));
            ExitCode::FAILURE
        }
    }
}
