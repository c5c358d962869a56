// SPDX-License-Identifier: GPL-2.0
//! `limit`: writing io.max, io.weight and io.latency settings for every leaf
//! device of a bound namespace (also used by `restore`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::bind::show_rel;
use crate::cgroupfs::{self, CgroupIndex, Systemd};
use crate::cli::LimitArgs;
use crate::configfs::{Namespace, NsId};
use crate::device::{self, DevLookup, DevT, Resolved};
use crate::limits::{self, Change, DevLimits, Latency, Limit, Weight};
use crate::nvmectrl;
use crate::paths::Roots;
use crate::sysio;

/// Why `limit` and `restore` take no io.max settings for a passthru
/// subsystem.
pub const IO_MAX_PASSTHRU: &str = "io.max does not apply to passthru subsystems: passthrough requests bypass blk-throttle; use --weight (io.cost) or --latency (io.latency)";

/// The cgroup a namespace is bound to: its ID and path.
pub fn bound_cgroup(roots: &Roots, ns: &Namespace) -> Result<(u64, String)> {
    bound_with(roots, ns, |id| cgroupfs::find_by_id(roots, id))
}

/// [`bound_cgroup`] with the IDs looked up in an index of every cgroup.
pub fn bound_cgroup_in(
    roots: &Roots,
    index: &CgroupIndex,
    ns: &Namespace,
) -> Result<(u64, String)> {
    bound_with(roots, ns, |id| Ok(index.get(id).map(str::to_string)))
}

fn bound_with(
    roots: &Roots,
    ns: &Namespace,
    find: impl FnOnce(u64) -> Result<Option<String>>,
) -> Result<(u64, String)> {
    let id = ns.cgroup_id()?;
    if id == 0 {
        bail!(
            "{} is not bound to a cgroup (cgroup_id is 0): bind it first",
            ns.label()
        );
    }
    let rel = find(id)?.ok_or_else(|| {
        anyhow!(
            "{}: cgroup_id {id} matches no cgroup under {} (stale id? bind it again)",
            ns.label(),
            roots.cgroupfs.display()
        )
    })?;
    Ok((id, rel))
}

/// The namespace's backing device and its leaf disks; for a passthru
/// controller, its character device and its namespaces' disks.
pub fn ns_devices(roots: &Roots, lookup: &dyn DevLookup, ns: &Namespace) -> Result<Resolved> {
    let dp = ns.device_path()?;
    if dp.is_empty() {
        bail!("{} has no device_path", ns.label());
    }
    let res = match ns.nsid {
        NsId::Ns(_) => device::resolve_path(roots, lookup, Path::new(&dp)),
        NsId::Passthru => nvmectrl::resolve(roots, lookup, Path::new(&dp)),
    };
    res.with_context(|| format!("{}: device_path {dp}", ns.label()))
}

/// How a namespace's top device is shown: `8:16 (sdb)`, or for a passthru
/// controller `controller nvme0 (241:0)`.
pub fn show_top(roots: &Roots, ns: &Namespace, dev: DevT) -> String {
    match ns.nsid {
        NsId::Ns(_) => show_dev(roots, dev),
        NsId::Passthru => match nvmectrl::ctrl_name(roots, dev) {
            Some(n) => format!("controller {n} ({dev})"),
            None => format!("controller {dev}"),
        },
    }
}

/// The limits that apply to a passthru controller's disk: `l` without its
/// io.max keys, and whether it had any.
pub fn without_io_max(l: &DevLimits) -> (DevLimits, bool) {
    let kept = DevLimits {
        weight: l.weight,
        latency_us: l.latency_us,
        ..DevLimits::default()
    };
    let had = l.riops.is_some() || l.wiops.is_some() || l.rbps.is_some() || l.wbps.is_some();
    (kept, had)
}

fn control_files(dir: &Path, change: &Change) -> Vec<(PathBuf, &'static str)> {
    let mut v = Vec::new();
    if change.has_io_max() {
        v.push((dir.join("io.max"), "blk-throttle"));
    }
    if change.weight.is_some() {
        v.push((dir.join("io.weight"), "io.cost or bfq"));
    }
    if change.latency.is_some() {
        v.push((dir.join("io.latency"), "io.latency"));
    }
    v
}

/// Fail unless the cgroup has the files the change writes.
pub fn check_files(dir: &Path, change: &Change) -> Result<()> {
    for (f, policy) in control_files(dir, change) {
        // io enabled (io.max is there) and still no io.latency: the kernel
        // lacks the controller, as Debian's does; say so rather than blame
        // the parent's subtree_control.
        if policy == "io.latency" && !f.is_file() && dir.join("io.max").is_file() {
            bail!(
                "io.latency is not available on this kernel (built without CONFIG_BLK_CGROUP_IOLATENCY, as Debian's kernels are): {} does not exist; use --weight (io.cost) or --riops/--wiops/--rbps/--wbps (io.max) instead",
                f.display()
            );
        }
        if !f.is_file() {
            bail!(
                "{} does not exist (io not enabled in the parent's cgroup.subtree_control, or no {policy} in this kernel)",
                f.display()
            );
        }
    }
    Ok(())
}

/// Write a change for one device; returns the lines written, with their file.
pub fn write_change(dir: &Path, dev: DevT, change: &Change) -> Result<Vec<String>> {
    let mut done = Vec::new();
    let lines = [
        ("io.max", change.io_max_line(dev)),
        ("io.weight", change.weight_line(dev)),
        ("io.latency", change.latency_line(dev)),
    ];
    for (file, line) in lines {
        if let Some(l) = line {
            sysio::write_control(&dir.join(file), &l)?;
            done.push(format!("{file} \"{l}\""));
        }
    }
    Ok(done)
}

/// The systemd unit properties that make `change` on the device at `path`
/// (systemd.resource-control(5): IOReadIOPSMax=, IODeviceWeight=, ...).
pub fn systemd_properties(path: &str, change: &Change) -> Result<Vec<String>> {
    let limit = |v: Limit| match v {
        Limit::Max => "infinity".to_string(),
        Limit::Value(n) => n.to_string(),
    };
    let mut props = Vec::new();
    let keys = [
        ("IOReadIOPSMax", change.riops),
        ("IOWriteIOPSMax", change.wiops),
        ("IOReadBandwidthMax", change.rbps),
        ("IOWriteBandwidthMax", change.wbps),
    ];
    for (key, v) in keys {
        if let Some(v) = v {
            props.push(format!("{key}={path} {}", limit(v)));
        }
    }
    match change.weight {
        Some(Weight::Value(w)) => props.push(format!("IODeviceWeight={path} {w}")),
        Some(Weight::Default) => bail!(
            "--weight default on a systemd slice: systemd can only clear every device's weight at once (systemctl set-property --runtime SLICE IODeviceWeight=)"
        ),
        None => {}
    }
    match change.latency {
        Some(Latency::Usec(us)) => props.push(format!("IODeviceLatencyTargetSec={path} {us}us")),
        Some(Latency::Max) => props.push(format!("IODeviceLatencyTargetSec={path} infinity")),
        None => {}
    }
    Ok(props)
}

/// Make `change` on each of `devs` in the cgroup `rel`: through systemd's
/// unit properties when systemd owns the cgroup (a slice on a systemd
/// host), then checked in the kernel's files; else by writing the files.
/// Returns, per device, what was done.
pub fn apply_change(
    roots: &Roots,
    systemd: &dyn Systemd,
    rel: &str,
    devs: &[(DevT, Change)],
) -> Result<Vec<(DevT, Vec<String>)>> {
    let dir = roots.cgroup_dir(rel);
    let Some(slice) = cgroupfs::systemd_slice(roots, rel) else {
        let mut done = Vec::new();
        for (dev, change) in devs {
            done.push((*dev, write_change(&dir, *dev, change)?));
        }
        return Ok(done);
    };
    let mut props = Vec::new();
    let mut done = Vec::new();
    for (dev, change) in devs {
        let path = device::dev_save_path(roots, *dev)
            .with_context(|| format!("naming device {dev} for systemd"))?;
        let p = systemd_properties(&path, change)?;
        done.push((*dev, p.iter().map(|p| format!("{slice} {p}")).collect()));
        props.extend(p);
    }
    if props.is_empty() {
        return Ok(done);
    }
    systemd.set_properties(&slice, &props)?;
    // systemd applies them as it realizes the unit; the kernel's files
    // must show them before this says the tenant is limited.
    let pending = || -> Result<Vec<String>> {
        let mut left = Vec::new();
        for (dev, change) in devs {
            let rest = change.minus(&read_limits(&dir, *dev)?);
            if !rest.is_empty() {
                left.push(format!("{dev}: {rest:?}"));
            }
        }
        Ok(left)
    };
    for _ in 0..30 {
        if pending()?.is_empty() {
            return Ok(done);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    bail!(
        "systemd accepted the properties of {slice} ({}), but {} still does not show them after 3 s: {}",
        props.join(", "),
        dir.display(),
        pending()?.join("; ")
    )
}

/// The limits in effect for `dev` in the cgroup `dir`.
pub fn read_limits(dir: &Path, dev: DevT) -> Result<DevLimits> {
    let get =
        |f: &str| -> Result<String> { Ok(sysio::read_opt(&dir.join(f))?.unwrap_or_default()) };
    Ok(limits::limits_for(
        &get("io.max")?,
        &get("io.weight")?,
        &get("io.latency")?,
        dev,
    ))
}

/// How a device is shown: `8:16 (sdb)`.
pub fn show_dev(roots: &Roots, dev: DevT) -> String {
    match device::dev_name(roots, dev) {
        Some(n) => format!("{dev} ({n})"),
        None => dev.to_string(),
    }
}

pub fn limit(
    roots: &Roots,
    lookup: &dyn DevLookup,
    systemd: &dyn Systemd,
    args: &LimitArgs,
    out: &mut String,
) -> Result<()> {
    let change = Change {
        riops: args.riops,
        wiops: args.wiops,
        rbps: args.rbps,
        wbps: args.wbps,
        weight: args.weight,
        latency: args.latency,
    };
    if change.is_empty() {
        bail!("give at least one of --riops, --wiops, --rbps, --wbps, --weight, --latency");
    }
    // Before anything is read or written: the settings themselves are
    // wrong for a passthru subsystem.
    if args.ns.nsid.is_passthru() && change.has_io_max() {
        bail!("{IO_MAX_PASSTHRU}");
    }
    let ns = Namespace::open(roots, &args.ns.nqn, args.ns.nsid)?;
    let (_, rel) = bound_cgroup(roots, &ns)?;
    let dir = roots.cgroup_dir(&rel);
    let res = ns_devices(roots, lookup, &ns)?;
    if res.leaves.is_empty() {
        bail!(
            "{}: {} has no namespaces: no disk to set anything on",
            ns.label(),
            show_top(roots, &ns, res.top)
        );
    }
    check_files(&dir, &change)?;
    let _ = writeln!(
        out,
        "{} (device {}) in cgroup {}:",
        ns.label(),
        show_top(roots, &ns, res.top),
        show_rel(&rel)
    );
    let wanted: Vec<(DevT, Change)> = res.leaves.iter().map(|l| (*l, change)).collect();
    for (leaf, done) in apply_change(roots, systemd, &rel, &wanted)? {
        let _ = writeln!(out, "  {}: {}", show_dev(roots, leaf), done.join(", "));
    }
    Ok(())
}
