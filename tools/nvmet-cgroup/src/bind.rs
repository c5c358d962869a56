// SPDX-License-Identifier: GPL-2.0
//! `bind` and `unbind`: changing a namespace's cgroup_id, disabling and
//! re-enabling it around the change when asked, with nothing half-applied.

use std::fmt::Write as _;

use anyhow::{bail, Result};

use crate::cgroupfs::{self, Systemd, Target};
use crate::cli::{BindArgs, UnbindArgs};
use crate::configfs::Namespace;
use crate::module;
use crate::paths::Roots;

/// A namespace's state before a change.
#[derive(Debug, Clone, Copy)]
pub struct Current {
    pub enabled: bool,
    pub id: u64,
}

/// How a cgroup path is shown: the root is "/".
pub fn show_rel(rel: &str) -> &str {
    if rel.is_empty() {
        "/"
    } else {
        rel
    }
}

/// Check, without changing anything, that the namespace's cgroup_id can be
/// set to `new` (`None`: a non-zero ID not known yet).  An enabled namespace
/// needs `reenable` (else the error says `hint`), and the module if the new
/// ID is not 0.
pub fn precheck(
    roots: &Roots,
    ns: &Namespace,
    new: Option<u64>,
    reenable: bool,
    hint: &str,
) -> Result<Current> {
    let cur = Current {
        enabled: ns.enabled()?,
        id: ns.cgroup_id()?,
    };
    if !cur.enabled || new == Some(cur.id) {
        return Ok(cur);
    }
    if !reenable {
        bail!(
            "{} is enabled: its cgroup_id can only change while it is disabled ({hint})",
            ns.label()
        );
    }
    if new != Some(0) {
        module::require_loaded(roots, ns)?;
    }
    Ok(cur)
}

/// Write `new` to cgroup_id (disabling and enabling again if the namespace
/// is enabled; [`precheck`] said that is allowed).  If the final enable
/// fails, the previous cgroup_id is written back and the namespace enabled
/// again before the error is returned.  Returns whether anything changed.
pub fn swap(ns: &Namespace, cur: &Current, new: u64) -> Result<bool> {
    if cur.id == new {
        return Ok(false);
    }
    if !cur.enabled {
        ns.set_cgroup_id(new)?;
        return Ok(true);
    }
    ns.set_enable(false)?;
    if let Err(e) = ns.set_cgroup_id(new) {
        let note = match ns.set_enable(true) {
            Ok(()) => "it is enabled again, unchanged".to_string(),
            Err(e2) => format!("enabling it again failed too ({e2:#}); it is disabled"),
        };
        return Err(e.context(format!("changing the cgroup_id of {} ({note})", ns.label())));
    }
    if let Err(e) = ns.set_enable(true) {
        let rollback = ns.set_cgroup_id(cur.id).and_then(|()| ns.set_enable(true));
        let note = match rollback {
            Ok(()) => format!("restored cgroup_id {} and enabled it again", cur.id),
            Err(e2) => format!(
                "restoring cgroup_id {} and enabling it failed too ({e2:#}); it is disabled",
                cur.id
            ),
        };
        return Err(e.context(format!(
            "enabling {} with cgroup_id {new} failed ({note})",
            ns.label()
        )));
    }
    Ok(true)
}

const REENABLE_HINT: &str = "use --reenable to disable it, change it and enable it again";

pub fn bind(roots: &Roots, systemd: &dyn Systemd, args: &BindArgs, out: &mut String) -> Result<()> {
    let ns = Namespace::open(roots, &args.ns.nqn, args.ns.nsid)?;
    let target = match (&args.target.cgroup, &args.target.slice) {
        (Some(c), _) => Target::Path(cgroupfs::normalize_path(roots, c)?),
        (None, Some(s)) => Target::Slice(s.clone()),
        (None, None) => bail!("give --cgroup PATH or --slice NAME.slice"),
    };
    let plan = cgroupfs::plan(roots, &target, args.create)?;
    let known = if plan.create.is_empty() {
        Some(cgroupfs::id_of(&plan.dir(roots))?)
    } else {
        None
    };
    let cur = precheck(roots, &ns, known, args.reenable, REENABLE_HINT)?;
    let id = cgroupfs::apply(roots, &plan, systemd)?;
    let changed = swap(&ns, &cur, id)?;
    let verb = if changed { "bound" } else { "already bound" };
    let _ = writeln!(
        out,
        "{verb}: {} -> cgroup {} (id {id})",
        ns.label(),
        show_rel(&plan.rel)
    );
    if !cur.enabled && !roots.module_loaded() {
        let _ = writeln!(out, "note: load nvmet_cgroup before enabling the namespace");
    }
    Ok(())
}

pub fn unbind(roots: &Roots, args: &UnbindArgs, out: &mut String) -> Result<()> {
    let ns = Namespace::open(roots, &args.ns.nqn, args.ns.nsid)?;
    let cur = precheck(roots, &ns, Some(0), args.reenable, REENABLE_HINT)?;
    let changed = swap(&ns, &cur, 0)?;
    let verb = if changed { "unbound" } else { "not bound" };
    let _ = writeln!(out, "{verb}: {}", ns.label());
    Ok(())
}
