// SPDX-License-Identifier: GPL-2.0
//! `restore`: apply a save file (parsed and validated whole first): per
//! record, create the cgroup if missing, write the limits on the devices
//! found again from their `/dev` paths, then write the fresh cgroup ID.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::apply;
use crate::bind::{self, show_rel};
use crate::cgroupfs::{self, Systemd};
use crate::config::{self, Record};
use crate::configfs::{Namespace, NsId};
use crate::device::{self, DevLookup, DevT};
use crate::limits::Change;
use crate::nvmectrl;
use crate::paths::Roots;
use crate::sysio::AttrWriter;

const HINT: &str = "restore was run with --no-reenable";

fn one(
    roots: &Roots,
    lookup: &dyn DevLookup,
    systemd: &dyn Systemd,
    w: &dyn AttrWriter,
    r: &Record,
    reenable: bool,
) -> Result<String> {
    // A passthru record with io.max is refused whole, before anything is
    // read: what it asks for can't be had.
    if r.nsid.is_passthru() {
        for d in &r.devices {
            let (_, had) = apply::without_io_max(&d.limits());
            if had {
                bail!(
                    "device {} has io.max limits (riops, wiops, rbps or wbps): {}; nothing restored for it (remove them from the file)",
                    d.path,
                    apply::IO_MAX_PASSTHRU
                );
            }
        }
    }
    let ns = Namespace::open(roots, &r.nqn, r.nsid)?;
    // Everything that can be checked before a change is checked first; the
    // device stack first of all: limits recorded for the disks of another
    // stack would land on whatever the paths name now.
    let verified = verify_stack(roots, lookup, &ns, r)?;
    let ctrl_disks = if r.nsid.is_passthru() && !r.devices.is_empty() {
        apply::ns_devices(roots, lookup, &ns)?.leaves
    } else {
        Vec::new()
    };
    let mut wanted: Vec<(DevT, Change)> = Vec::new();
    for d in &r.devices {
        let leaves = match r.nsid {
            NsId::Ns(_) => device::resolve_recorded(roots, lookup, &d.path),
            NsId::Passthru => {
                nvmectrl::resolve_recorded(roots, lookup, &d.path, &ctrl_disks).map(|l| vec![l])
            }
        }
        .with_context(|| format!("device {}", d.path))?;
        let change = Change::from_limits(&d.limits());
        wanted.extend(leaves.into_iter().map(|l| (l, change)));
    }
    let plan = cgroupfs::plan(roots, &r.target(), true)?;
    let dir = plan.dir(roots);
    let known = if plan.create.is_empty() {
        for (_, c) in &wanted {
            apply::check_files(&dir, c)?;
        }
        Some(cgroupfs::id_of(&dir)?)
    } else {
        None
    };
    let cur = bind::precheck(roots, &ns, known, reenable, HINT)?;

    let applied = cgroupfs::apply(roots, &plan, systemd)?;
    let id = applied.id;
    let write_all = || -> Result<(usize, bool)> {
        let mut rest = Vec::new();
        for (dev, c) in &wanted {
            let r = c.minus(&apply::read_limits(&dir, *dev)?);
            if !r.is_empty() {
                apply::check_files(&dir, &r)?;
                rest.push((*dev, r));
            }
        }
        let done = apply::apply_change(roots, systemd, &plan.rel, &rest)?;
        let written = done.iter().map(|(_, d)| d.len()).sum();
        Ok((written, bind::swap(w, &ns, &cur, id)?))
    };
    let (written, changed) = write_all().map_err(|e| bind::undo_unless_named(&applied, &ns, e))?;
    let what = match (changed, written) {
        (false, 0) => "unchanged".to_string(),
        (true, n) => format!("cgroup_id set, {n} limit line(s) written"),
        (false, n) => format!("{n} limit line(s) written"),
    };
    let unchecked = if verified {
        ""
    } else {
        " (no device stack in the file: not verified)"
    };
    Ok(format!(
        "{}: cgroup {} (id {id}): {what}{unchecked}",
        ns.label(),
        show_rel(&plan.rel)
    ))
}

/// Refuse a record whose namespace now has another `device_path`, or whose
/// device no longer reaches the same disks the same way (a dm device
/// rebuilt over another disk, a loop device over another file).  False if
/// the record has no stack to compare with.
fn verify_stack(roots: &Roots, lookup: &dyn DevLookup, ns: &Namespace, r: &Record) -> Result<bool> {
    let Some(saved) = &r.stack else {
        return Ok(false);
    };
    let now_path = ns.device_path()?;
    if now_path != r.device_path {
        bail!(
            "its device_path is now \"{now_path}\", not the saved \"{}\": nothing restored for it (bind, limit and save it again if the change is intended)",
            r.device_path
        );
    }
    let now = apply::ns_devices(roots, lookup, ns)
        .context("its device stack can't be checked: nothing restored for it")?;
    if &now.stack != saved {
        bail!(
            "the device stack under {now_path} changed since it was saved (saved: {}; now: {}): nothing restored for it, so that its limits do not land on other disks (bind, limit and save it again if the change is intended)",
            saved.join("; "),
            now.stack.join("; ")
        );
    }
    Ok(true)
}

pub fn restore(
    roots: &Roots,
    lookup: &dyn DevLookup,
    systemd: &dyn Systemd,
    w: &dyn AttrWriter,
    file: &Path,
    reenable: bool,
    out: &mut String,
) -> Result<()> {
    let text = crate::sysio::read(file)?;
    let doc = config::parse(&text).with_context(|| format!("{}", file.display()))?;
    let mut failed = 0;
    for r in &doc.namespaces {
        match one(roots, lookup, systemd, w, r, reenable) {
            Ok(msg) => {
                let _ = writeln!(out, "{msg}");
            }
            Err(e) => {
                failed += 1;
                crate::print_error(&format!("{}: {e:#}", r.label()));
            }
        }
    }
    if failed > 0 {
        bail!(
            "{failed} of {} record(s) in {} could not be restored",
            doc.namespaces.len(),
            file.display()
        );
    }
    let _ = writeln!(out, "restored {} namespace(s)", doc.namespaces.len());
    Ok(())
}
