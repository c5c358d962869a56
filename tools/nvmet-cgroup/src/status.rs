// SPDX-License-Identifier: GPL-2.0
//! `status`: each namespace's binding, devices, limits, io.stat counters and
//! execution context, as a table or as JSON.
//!
//! JSON schema (`status --json`, version 1):
//!
//! ```text
//! { "version": 1,
//!   "namespaces": [ {
//!     "nqn": string, "nsid": number, "device_path": string, "enabled": bool,
//!     "cgroup_id": number,
//!     "cgroup_state": "none" | "bound" | "stale",
//!     "cgroup_path": string | null,        // relative to the cgroup root, "" = root
//!     "top_device": "MAJ:MIN" | null,      // the device of device_path
//!     "device_error": string | null,       // why the devices could not be resolved
//!     "devices": [ {                        // leaf whole disks the limits apply to
//!       "dev": "MAJ:MIN", "name": string | null,
//!       "limits": null | { "riops", "wiops", "rbps", "wbps", "weight", "latency_us":
//!                          number | null },   // null: no limit / default weight
//!       "stat": null | { "rbytes", "wbytes", "rios", "wios", "dbytes", "dios": number }
//!     } ],
//!     "exec": string                       // where the namespace's commands run
//!   } ] }
//! ```

use std::fmt::Write as _;

use anyhow::Result;
use serde::Serialize;

use crate::apply;
use crate::cgroupfs;
use crate::cli::StatusArgs;
use crate::configfs::Namespace;
use crate::device::{self, DevLookup};
use crate::limits::{self, DevLimits, IoStat};
use crate::module;
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
    pub nsid: u32,
    pub device_path: String,
    pub enabled: bool,
    pub cgroup_id: u64,
    pub cgroup_state: &'static str,
    pub cgroup_path: Option<String>,
    pub top_device: Option<String>,
    pub device_error: Option<String>,
    pub devices: Vec<DevStatus>,
    pub exec: String,
}

#[derive(Debug, Serialize)]
pub struct DevStatus {
    pub dev: String,
    pub name: Option<String>,
    pub limits: Option<DevLimits>,
    pub stat: Option<IoStat>,
}

fn one(roots: &Roots, lookup: &dyn DevLookup, ns: &Namespace) -> Result<NsStatus> {
    let cgroup_id = ns.cgroup_id()?;
    let cgroup_path = cgroupfs::find_by_id(roots, cgroup_id)?;
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
    for dev in leaves {
        let lim = match &dir {
            Some(d) => Some(apply::read_limits(d, dev)?),
            None => None,
        };
        devices.push(DevStatus {
            dev: dev.to_string(),
            name: device::dev_name(roots, dev),
            limits: lim,
            stat: dir.as_ref().and_then(|_| stats.get(&dev).cloned()),
        });
    }
    Ok(NsStatus {
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
        exec: module::exec_info(roots, ns),
    })
}

pub fn collect(roots: &Roots, lookup: &dyn DevLookup, args: &StatusArgs) -> Result<StatusDoc> {
    let mut namespaces = Vec::new();
    for ns in Namespace::list(roots, args.nqn.as_deref(), args.nsid)? {
        namespaces.push(one(roots, lookup, &ns)?);
    }
    Ok(StatusDoc {
        version: 1,
        namespaces,
    })
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "max".to_string(), |n| n.to_string())
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
        let _ = writeln!(out, "{} nsid {}", ns.nqn, ns.nsid);
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
        if ns.devices.iter().any(|d| d.limits.is_some()) {
            let _ = writeln!(
                out,
                "  {:<14} {:>10} {:>10} {:>12} {:>12} {:>7} {:>10} {:>14} {:>14} {:>10} {:>10}",
                "DEVICE",
                "RIOPS",
                "WIOPS",
                "RBPS",
                "WBPS",
                "WEIGHT",
                "LAT(us)",
                "RBYTES",
                "WBYTES",
                "RIOS",
                "WIOS"
            );
        }
        for d in &ns.devices {
            let Some(l) = &d.limits else { continue };
            let name = match &d.name {
                Some(n) => format!("{} {n}", d.dev),
                None => d.dev.clone(),
            };
            let s = d.stat.clone().unwrap_or_default();
            let _ = writeln!(
                out,
                "  {:<14} {:>10} {:>10} {:>12} {:>12} {:>7} {:>10} {:>14} {:>14} {:>10} {:>10}",
                name,
                opt(l.riops),
                opt(l.wiops),
                opt(l.rbps),
                opt(l.wbps),
                l.weight
                    .map_or_else(|| "default".to_string(), |w| w.to_string()),
                opt(l.latency_us),
                s.rbytes,
                s.wbytes,
                s.rios,
                s.wios
            );
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
