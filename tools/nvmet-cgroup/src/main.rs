// SPDX-License-Identifier: GPL-2.0
//! nvmet-cgroup: bind nvmet namespaces to cgroups and set their io limits.

mod apply;
mod bind;
mod cgroupfs;
mod cli;
mod config;
mod configfs;
mod device;
mod limits;
mod module;
mod paths;
mod restore;
mod save;
mod status;
mod sysio;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

use crate::cli::{Cli, Command};
use crate::device::{DevLookup, MapLookup, StatLookup};

/// One error line on stderr: `nvmet-cgroup: error: ...`.
pub fn print_error(msg: &str) {
    let one_line = msg.replace('\n', " ");
    let _ = writeln!(std::io::stderr(), "nvmet-cgroup: error: {one_line}");
}

fn man(out: &mut Vec<u8>) -> Result<()> {
    clap_mangen::Man::new(Cli::command())
        .section("8")
        .render(out)?;
    Ok(())
}

fn run(cli: &Cli, out: &mut Vec<u8>) -> Result<()> {
    let roots = cli.roots.roots();
    let lookup: Box<dyn DevLookup> = match &cli.roots.dev_map {
        Some(f) => Box::new(MapLookup::load(f)?),
        None => Box::new(StatLookup),
    };
    let systemd = cgroupfs::Systemctl;
    let attrs = sysio::Files;
    let mut text = String::new();
    let res = match &cli.command {
        Command::Bind(a) => bind::bind(&roots, &systemd, &attrs, a, &mut text),
        Command::Unbind(a) => bind::unbind(&roots, &attrs, a, &mut text),
        Command::Limit(a) => apply::limit(&roots, lookup.as_ref(), a, &mut text),
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
        Command::Man => man(out),
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
    // Output first (a restore reports what it did before the final error);
    // a closed stdout is not worth a panic.
    let _ = std::io::stdout().write_all(&out);
    let _ = std::io::stdout().flush();
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            print_error(&format!("{e:#}"));
            ExitCode::FAILURE
        }
    }
}
