// SPDX-License-Identifier: GPL-2.0
//! `status`: each namespace's (and passthru subsystem's) binding, devices,
//! limits, io.stat counters and execution context, as a table or as JSON.
//!
//! JSON schema (`status --json`, version 1):
//!
//! ```text
//! { "version": 1,
//!   "namespaces": [ {
//!     "nqn": string,
//!     "nsid": number | "passthru",         // "passthru": a passthru subsystem's controller
//!     "device_path": string, "enabled": bool,
//!     "cgroup_id": number,
//!     "cgroup_state": "none" | "bound" | "stale",
//!     "cgroup_path": string | null,        // relative to the cgroup root, "" = root
//!     "top_device": "MAJ:MIN" | null,      // the device of device_path (passthru:
//!                                          // the controller's character device)
//!     "device_error": string | null,       // why the devices could not be resolved
//!     "devices": [ {                        // leaf whole disks the limits apply to
//!                                           // (passthru: the controller's disks)
//!       "dev": "MAJ:MIN", "name": string | null,
//!       "limits": null | { "riops", "wiops", "rbps", "wbps", "weight", "latency_us":
//!                          number | null },   // null: no limit / default weight;
//!                                             // passthru: io.max keys always null
//!       "stat": null | { "rbytes", "wbytes", "rios", "wios", "dbytes", "dios": number }
//!     } ],
//!     "exec": string,                      // where the namespace's commands run
//!     "warnings": [ string ]               // e.g. io.max multiplied by striping, or
//!                                          // io.max lines that do not apply (passthru)
//!   } ] }
//! ```

use std::fmt::Write as _;

use anyhow::Result;
use bytesize::ByteSize;
use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use serde::Serialize;

use crate::apply;
use crate::cgroupfs::CgroupIndex;
use crate::cli::StatusArgs;
use crate::configfs::{Namespace, NsId};
use crate::device::{self, DevLookup};
use crate::limits::{self, DevLimits, IoStat};
use crate::module::ExecInfo;
use crate::paths::Roots;
use crate::sysio;

#[derive(Debug, Serialize)]
pub struct StatusDoc {
    pub version: u32,
    pub namespaces: Vec<NsStatus>,
}

#[derive(Debug, Serialize)]
pub struct NsStatus {
    pub nqn: String,
    pub nsid: NsId,
    pub device_path: String,
    pub enabled: bool,
    pub cgroup_id: u64,
    pub cgroup_state: &'static str,
    pub cgroup_path: Option<String>,
    pub top_device: Option<String>,
    pub device_error: Option<String>,
    pub devices: Vec<DevStatus>,
    pub exec: String,
    /// What an operator should know: limits multiplied by striping.
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct DevStatus {
    pub dev: String,
    pub name: Option<String>,
    pub limits: Option<DevLimits>,
    pub stat: Option<IoStat>,
}

fn one(
    roots: &Roots,
    lookup: &dyn DevLookup,
    index: &CgroupIndex,
    exec: &ExecInfo,
    ns: &Namespace,
) -> Result<NsStatus> {
    let cgroup_id = ns.cgroup_id()?;
    let cgroup_path = index.get(cgroup_id).map(str::to_string);
    let cgroup_state = match (cgroup_id, &cgroup_path) {
        (0, _) => "none",
        (_, Some(_)) => "bound",
        (_, None) => "stale",
    };
    let (top_device, leaves, device_error) = match apply::ns_devices(roots, lookup, ns) {
        Ok(r) => (Some(r.top.to_string()), r.leaves, None),
        Err(e) => (None, Vec::new(), Some(format!("{e:#}"))),
    };
    let dir = cgroup_path.as_deref().map(|rel| roots.cgroup_dir(rel));
    let stats = match &dir {
        Some(d) => limits::parse_io_stat(&sysio::read_opt(&d.join("io.stat"))?.unwrap_or_default()),
        None => Default::default(),
    };
    let mut devices = Vec::new();
    let mut ignored = Vec::new();
    for dev in leaves {
        let mut lim = match &dir {
            Some(d) => Some(apply::read_limits(d, dev)?),
            None => None,
        };
        if let (NsId::Passthru, Some(l)) = (ns.nsid, &lim) {
            // Never shown as applying: blk-throttle does not see
            // passthrough requests.
            let (kept, had) = apply::without_io_max(l);
            if had {
                ignored.push(dev.to_string());
            }
            lim = Some(kept);
        }
        devices.push(DevStatus {
            dev: dev.to_string(),
            name: device::dev_name(roots, dev),
            limits: lim,
            stat: dir.as_ref().and_then(|_| stats.get(&dev).cloned()),
        });
    }
    let mut st = NsStatus {
        nqn: ns.nqn.clone(),
        nsid: ns.nsid,
        device_path: ns.device_path()?,
        enabled: ns.enabled()?,
        cgroup_id,
        cgroup_state,
        cgroup_path,
        top_device,
        device_error,
        devices,
        exec: exec.of(ns),
        warnings: Vec::new(),
    };
    st.warnings.extend(spread_warning(&st));
    if !ignored.is_empty() {
        st.warnings.push(format!(
            "the cgroup has io.max limits on {}, which do not apply to this passthru subsystem's I/O: passthrough requests bypass blk-throttle (use io.weight or io.latency)",
            ignored.join(" ")
        ));
    }
    Ok(st)
}

pub fn collect(roots: &Roots, lookup: &dyn DevLookup, args: &StatusArgs) -> Result<StatusDoc> {
    let index = CgroupIndex::build(roots);
    let exec = ExecInfo::load(roots);
    let mut namespaces = Vec::new();
    for ns in Namespace::list(roots, args.nqn.as_deref(), args.nsid)? {
        namespaces.push(one(roots, lookup, &index, &exec, &ns)?);
    }
    Ok(StatusDoc {
        version: 1,
        namespaces,
    })
}

/// A limit as the table shows it: `max` for none.
fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "max".to_string(), |n| n.to_string())
}

/// A byte rate or count in SI units (base 1000, as the limits are given).
fn bytes(v: u64) -> String {
    ByteSize(v).display().si().to_string()
}

/// A byte rate: `20.0 MB/s`.
fn rate(n: u64) -> String {
    format!("{}/s", bytes(n))
}

fn bps(v: Option<u64>) -> String {
    v.map_or_else(|| "max".to_string(), rate)
}

/// An io.max key: its name, its value in a device's limits, how it shows.
type CapKey = (
    &'static str,
    fn(&DevLimits) -> Option<u64>,
    fn(u64) -> String,
);

/// io.max acts per (cgroup, disk): a namespace whose device spans several
/// disks (dm or md striping, a concatenation) gets each limit once per
/// disk.  The warning says so and gives the effective caps: the sum over
/// the disks, or none when a disk has no limit for that key.
fn spread_warning(ns: &NsStatus) -> Option<String> {
    let limits: Vec<&DevLimits> = ns
        .devices
        .iter()
        .filter_map(|d| d.limits.as_ref())
        .collect();
    if limits.len() < 2 {
        return None;
    }
    let keys: [CapKey; 4] = [
        ("riops", |l| l.riops, |n| n.to_string()),
        ("wiops", |l| l.wiops, |n| n.to_string()),
        ("rbps", |l| l.rbps, rate),
        ("wbps", |l| l.wbps, rate),
    ];
    let mut caps = Vec::new();
    for (key, get, show) in keys {
        let set: Vec<u64> = limits.iter().filter_map(|l| get(l)).collect();
        if set.is_empty() {
            continue;
        }
        if set.len() < limits.len() {
            caps.push(format!("{key} unlimited (a disk has no {key} limit)"));
        } else {
            let sum = set.iter().fold(0u64, |a, b| a.saturating_add(*b));
            caps.push(format!("{key} {}", show(sum)));
        }
    }
    if caps.is_empty() {
        return None;
    }
    let names: Vec<&str> = ns.devices.iter().map(|d| d.dev.as_str()).collect();
    Some(format!(
        "io.max limits apply per disk and this namespace spans {} disks ({}): its I/O is capped at {} in all",
        names.len(),
        names.join(" "),
        caps.join(", ")
    ))
}

/// The terminal's width when standard output is one; `None` (no wrapping)
/// for pipes and files.
fn terminal_width() -> Option<u16> {
    let ws = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (ws.ws_col > 0).then_some(ws.ws_col)
}

fn device_table(ns: &NsStatus) -> Table {
    let mut t = Table::new();
    t.load_style(presets::NOTHING);
    if let Some(w) = terminal_width() {
        t.set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(w.saturating_sub(2));
    }
    // io.max does not apply to a passthru controller's disks: no columns.
    let io_max = !ns.nsid.is_passthru();
    let mut header = vec!["DEVICE"];
    if io_max {
        header.extend(["RIOPS", "WIOPS", "RBPS", "WBPS"]);
    }
    header.extend(["WEIGHT", "LATENCY", "READ", "WRITTEN", "RIOS", "WIOS"]);
    t.set_header(header);
    for d in &ns.devices {
        let Some(l) = &d.limits else { continue };
        let name = match &d.name {
            Some(n) => format!("{} {n}", d.dev),
            None => d.dev.clone(),
        };
        let s = d.stat.clone().unwrap_or_default();
        let mut row = vec![name];
        if io_max {
            row.extend([opt(l.riops), opt(l.wiops), bps(l.rbps), bps(l.wbps)]);
        }
        row.extend([
            l.weight
                .map_or_else(|| "default".to_string(), |w| w.to_string()),
            l.latency_us
                .map_or_else(|| "max".to_string(), |us| format!("{us}us")),
            bytes(s.rbytes),
            bytes(s.wbytes),
            s.rios.to_string(),
            s.wios.to_string(),
        ]);
        t.add_row(row);
    }
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

fn text(doc: &StatusDoc, out: &mut String) {
    if doc.namespaces.is_empty() {
        let _ = writeln!(out, "no namespaces");
    }
    for ns in &doc.namespaces {
        let cg = match (ns.cgroup_state, &ns.cgroup_path) {
            ("bound", Some(p)) => crate::bind::show_rel(p).to_string(),
            ("stale", _) => "not found (stale id?)".to_string(),
            _ => "none".to_string(),
        };
        let devs = match (&ns.top_device, &ns.device_error) {
            (Some(t), _) => {
                let l: Vec<&str> = ns.devices.iter().map(|d| d.dev.as_str()).collect();
                format!("{t} -> {}", l.join(" "))
            }
            (None, Some(e)) => format!("unresolved: {e}"),
            (None, None) => "unresolved".to_string(),
        };
        let _ = writeln!(out, "{}", crate::configfs::label(&ns.nqn, ns.nsid));
        let _ = writeln!(out, "  device_path  {}", ns.device_path);
        let _ = writeln!(
            out,
            "  enabled      {}",
            if ns.enabled { "yes" } else { "no" }
        );
        let _ = writeln!(out, "  cgroup_id    {}", ns.cgroup_id);
        let _ = writeln!(out, "  cgroup       {cg}");
        let _ = writeln!(out, "  devices      {devs}");
        let _ = writeln!(out, "  exec         {}", ns.exec);
        for w in &ns.warnings {
            let _ = writeln!(out, "  warning      {w}");
        }
        if ns.devices.iter().any(|d| d.limits.is_some()) {
            for line in device_table(ns).lines() {
                let _ = writeln!(out, "  {}", line.trim_end());
            }
        }
    }
}

pub fn status(
    roots: &Roots,
    lookup: &dyn DevLookup,
    args: &StatusArgs,
    out: &mut String,
) -> Result<()> {
    let doc = collect(roots, lookup, args)?;
    if args.json {
        out.push_str(&serde_json::to_string_pretty(&doc)?);
        out.push('\n');
    } else {
        text(&doc, out);
    }
    Ok(())
}
