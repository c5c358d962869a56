// SPDX-License-Identifier: GPL-2.0
//! The man page, nvmet-cgroup(8): clap_mangen's title, name, synopsis and
//! description, then every subcommand with its own options (from the same
//! clap definition as `--help`), and the FILES, EXIT STATUS, EXAMPLES and
//! SEE ALSO sections.

use std::io::Write;

use anyhow::Result;
use clap::{Arg, ArgAction, Command, CommandFactory};
use clap_mangen::Man;
use roff::{bold, italic, roman, Roff};

use crate::cli::{Cli, DEFAULT_FILE};

/// `text` on one line, runs of white space as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Paragraphs of a help text.
fn paragraphs(roff: &mut Roff, text: &str) {
    for p in text.split("\n\n") {
        let p = one_line(p);
        if !p.is_empty() {
            roff.control("PP", []).text([roman(p)]);
        }
    }
}

/// `--name VALUE` or `NAME` in bold and italics, as man-pages(7) asks.
fn arg_header(arg: &Arg) -> Vec<roff::Inline> {
    let values = arg
        .get_value_names()
        .map(|v| v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .unwrap_or_else(|| vec![arg.get_id().as_str().to_uppercase()]);
    match arg.get_long() {
        Some(long) => {
            let mut v = vec![bold(format!("--{long}"))];
            if matches!(arg.get_action(), ArgAction::Set | ArgAction::Append) {
                v.push(roman(" "));
                v.push(italic(values.join(" ")));
            }
            v
        }
        None => vec![italic(values.join(" "))],
    }
}

fn options(roff: &mut Roff, cmd: &Command) {
    for arg in cmd.get_arguments() {
        if arg.is_hide_set() || matches!(arg.get_action(), ArgAction::Help | ArgAction::Version) {
            continue;
        }
        let help = arg
            .get_long_help()
            .or_else(|| arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let mut help = one_line(&help);
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() {
            help.push_str(&format!(" Default: {}.", defaults.join(", ")));
        }
        roff.control("TP", [])
            .text(arg_header(arg))
            .text([roman(help)]);
    }
}

fn commands(roff: &mut Roff, top: &Command) {
    roff.control("SH", ["COMMANDS"]);
    for sub in top.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{} {}", top.get_name(), sub.get_name());
        let usage = sub.clone().bin_name(&name).render_usage().to_string();
        let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage).to_string();
        roff.control("SS", [sub.get_name()]);
        roff.control("PP", []).text([bold(usage)]);
        let about = sub
            .get_long_about()
            .or_else(|| sub.get_about())
            .map(|a| a.to_string())
            .unwrap_or_default();
        paragraphs(roff, &about);
        if sub
            .get_arguments()
            .any(|a| !a.is_hide_set() && !matches!(a.get_action(), ArgAction::Help))
        {
            roff.control("PP", [])
                .text([bold("Options and arguments:")]);
            roff.control("RS", []);
            options(roff, sub);
            roff.control("RE", []);
        }
    }
}

/// A definition list: `.TP` with a bold term, then the text.
fn entries(roff: &mut Roff, items: &[(&str, &str)]) {
    for (term, text) in items {
        roff.control("TP", [])
            .text([bold(*term)])
            .text([roman(*text)]);
    }
}

fn files(roff: &mut Roff) {
    roff.control("SH", ["FILES"]);
    let bak = format!("{DEFAULT_FILE}.bak");
    entries(
        roff,
        &[
            (
                DEFAULT_FILE,
                "The saved bindings and limits (JSON, version 1): what save writes and restore \
                 reads when no FILE is given. Cgroups are recorded by path, devices by \
                 /dev/disk/by-id/ link or /dev name with the identity of every layer between the \
                 namespace's device_path and the disk (dm UUID, partition number, loop backing \
                 file, WWN or serial), which restore checks before it writes.",
            ),
            (&bak, "The file a save replaced (FILE.bak for any FILE)."),
            (
                "/sys/kernel/config/nvmet/subsystems/NQN/namespaces/NSID/cgroup_id",
                "The namespace's cgroup: the cgroup directory's inode number, 0 for none. \
                 Writable only while the namespace is disabled.",
            ),
            (
                "/sys/kernel/config/nvmet/subsystems/NQN/passthru/cgroup_id",
                "The same for a passthru subsystem (named NQN passthru): writable only while \
                 passthru/enable reads 0. Its device_path is an NVMe controller (/dev/nvme0), \
                 whose namespaces (nvme0n1, ..., or the per-path nvme0c0n1, ... with native \
                 multipath) are the disks io.weight and io.latency are set on. io.max does not \
                 apply: passthrough requests bypass blk-throttle.",
            ),
            (
                "/sys/fs/cgroup",
                "The cgroup v2 mount: cgroup paths are relative to it; io.max, io.weight, \
                 io.latency and io.stat are read and written in the namespace's cgroup.",
            ),
            (
                "/sys/kernel/debug/nvmet_cgroup/namespaces",
                "The module's status file: where each bound namespace's commands run (status \
                 shows it); NSID 0 is a passthru subsystem's controller.",
            ),
            (
                "/lib/systemd/system/nvmet-cgroup.service",
                "Runs restore at boot, after nvmet.service (nvmetcli restore), and again \
                 whenever nvmet.service is restarted.",
            ),
            (
                "/etc/modprobe.d/nvmet-cgroup.conf",
                "Loads nvmet_cgroup whenever nvmet is loaded.",
            ),
        ],
    );
}

fn exit_status(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    entries(
        roff,
        &[
            ("0", "Success."),
            (
                "1",
                "The command failed: nothing was changed, or what had been changed was taken \
                 back (a restore reports each record it could not restore, applies the others \
                 and exits 1). Also when the output could not be written (a full disk).",
            ),
            ("2", "The command line was not understood."),
        ],
    );
}

fn examples(roff: &mut Roff) {
    roff.control("SH", ["EXAMPLES"]);
    let ex: &[(&str, &str)] = &[
        (
            "Charge namespace 1 of a subsystem to a new slice (through systemd on a systemd \
             host), disabling and enabling it around the change:",
            "nvmet-cgroup bind nqn.2014-08.org.example:vol1 1 --slice tenants-a.slice --create \
             --reenable",
        ),
        (
            "Limit it to 20000 read IOPS and 100 MB/s of writes on every disk behind it:",
            "nvmet-cgroup limit nqn.2014-08.org.example:vol1 1 --riops 20K --wbps 100M",
        ),
        (
            "Remove the read limit again:",
            "nvmet-cgroup limit nqn.2014-08.org.example:vol1 1 --riops infinity",
        ),
        (
            "Show every namespace, or one as JSON:",
            "nvmet-cgroup status; nvmet-cgroup status --json nqn.2014-08.org.example:vol1 1",
        ),
        (
            "Charge a passthru subsystem's controller to a cgroup and give it a weight on \
             the controller's disks (io.max is refused: passthrough requests bypass \
             blk-throttle):",
            "nvmet-cgroup bind nqn.2014-08.org.example:pt passthru --cgroup tenant-p \
             --reenable; nvmet-cgroup limit nqn.2014-08.org.example:pt passthru --weight 300",
        ),
        (
            "Keep the bindings for the next boot (nvmet-cgroup.service restores them):",
            "nvmet-cgroup save",
        ),
    ];
    for (what, cmd) in ex {
        roff.control("PP", []).text([roman(*what)]);
        roff.control("RS", []);
        roff.control("EX", []).text([roman(*cmd)]);
        roff.control("EE", []);
        roff.control("RE", []);
    }
}

fn see_also(roff: &mut Roff) {
    roff.control("SH", ["SEE ALSO"]);
    roff.text([
        bold("nvmetcli"),
        roman("(8), "),
        bold("systemd.resource-control"),
        roman("(5), "),
        bold("systemctl"),
        roman("(1), "),
        bold("cgroups"),
        roman("(7); the kernel's Documentation/admin-guide/cgroup-v2.rst (io controller)."),
    ]);
}

/// The whole page, in roff.
pub fn render(out: &mut Vec<u8>) -> Result<()> {
    let top = Cli::command();
    let man = Man::new(top.clone())
        .section("8")
        .manual("System Administration");
    // clap_mangen and roff leave an empty date unquoted, which shifts the
    // source and manual into the wrong fields of .TH: write it here.
    writeln!(
        out,
        ".TH nvmet-cgroup 8 \"\" \"nvmet-cgroup {}\" \"System Administration\"",
        env!("CARGO_PKG_VERSION")
    )?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut roff = Roff::new();
    commands(&mut roff, &top);
    files(&mut roff);
    exit_status(&mut roff);
    examples(&mut roff);
    see_also(&mut roff);
    roff.to_writer(out)?;
    Ok(())
}
