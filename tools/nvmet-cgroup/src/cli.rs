// SPDX-License-Identifier: GPL-2.0
//! The command line (clap derive); also the source of the man page.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand};

use crate::configfs::NsId;
use crate::limits::{self, Latency, Limit, Weight};
#[cfg(debug_assertions)]
use crate::paths::Roots;

/// Bind NVMe-oF target (nvmet) namespaces to cgroups and set their io limits.
#[derive(Debug, Parser)]
#[command(
    name = "nvmet-cgroup",
    version,
    long_about = "Bind NVMe-oF target (nvmet) namespaces to cgroup v2 cgroups and set their \
io limits.\n\nA namespace is named as nvmetcli names it: subsystem NQN and NSID. bind \
writes the cgroup's ID to the namespace's configfs attribute cgroup_id (the I/O of the \
namespace is then charged to that cgroup; the nvmet_cgroup module must be loaded to enable \
it), limit writes io.max, io.weight and io.latency for the disks behind the namespace, \
save and restore keep the bindings and limits across reboots (cgroup IDs are not stable, \
so cgroups are recorded by path and devices by /dev path). Runs as root.\n\nA passthru \
subsystem (passthru/device_path is an NVMe controller such as /dev/nvme0) is named by its \
NQN and the word passthru in place of the NSID: bind writes passthru/cgroup_id, and the \
controller's namespaces (its disks nvme0n1, ..., or nvme0c0n1, ... with native multipath) \
are the disks its settings apply to. Passthrough requests bypass blk-throttle, so io.max \
does not apply to them: limit refuses --riops, --wiops, --rbps and --wbps for passthru; \
--weight (io.cost) and --latency (io.latency) apply, and io.stat counts their I/O.\n\nRates given \
to limit take K, M, G and T suffixes to the base of 1000, for bytes and IOPS alike, as \
systemd.resource-control(5) parses IOReadBandwidthMax= and IOReadIOPSMax= (20K is 20000, \
100M is 100000000; KiB, MiB, ... are powers of 1024; fractions are rounded: 1.5K is 1500); \
infinity or max removes a limit."
)]
pub struct Cli {
    /// Only in debug builds (`cargo test`): a release binary always works
    /// on the real mount points.
    #[cfg(debug_assertions)]
    #[command(flatten)]
    pub roots: RootArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Filesystem roots, for tests against fixture trees: hidden options that
/// exist in debug builds only (the tests run a debug build and pass them on
/// the command line; nothing is read from the environment).
#[cfg(debug_assertions)]
#[derive(Debug, Args)]
pub struct RootArgs {
    #[arg(
        long,
        global = true,
        hide = true,
        default_value = "/sys/kernel/config/nvmet"
    )]
    pub configfs: PathBuf,
    #[arg(long, global = true, hide = true, default_value = "/sys/fs/cgroup")]
    pub cgroupfs: PathBuf,
    #[arg(long, global = true, hide = true, default_value = "/sys")]
    pub sysfs: PathBuf,
    #[arg(long, global = true, hide = true, default_value = "/dev")]
    pub devfs: PathBuf,
    #[arg(long, global = true, hide = true, default_value = "/sys/kernel/debug")]
    pub debugfs: PathBuf,
    #[arg(long, global = true, hide = true, default_value = "/run")]
    pub rundir: PathBuf,
    /// JSON table of device numbers for paths ({"PATH": {"block": "MAJ:MIN"}}), for tests.
    #[arg(long, global = true, hide = true)]
    pub dev_map: Option<PathBuf>,
}

#[cfg(debug_assertions)]
impl RootArgs {
    pub fn roots(&self) -> Roots {
        Roots {
            configfs: self.configfs.clone(),
            cgroupfs: self.cgroupfs.clone(),
            sysfs: self.sysfs.clone(),
            devfs: self.devfs.clone(),
            debugfs: self.debugfs.clone(),
            rundir: self.rundir.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Charge a namespace's I/O to a cgroup (writes the cgroup's ID to cgroup_id).
    ///
    /// NQN passthru binds a passthru subsystem's controller instead
    /// (passthru/cgroup_id; --reenable toggles passthru/enable).
    ///
    /// Every cgroup above it gets +io in cgroup.subtree_control; for a slice
    /// on a systemd host, systemd does that (systemctl set-property
    /// --runtime SLICE IOAccounting=yes, then start), since it owns those
    /// files and undoes other writes at its next daemon-reload. An enabled
    /// namespace is refused unless --reenable is given. If a step fails, the
    /// cgroups it created and the +io it wrote are taken back.
    Bind(BindArgs),
    /// Stop charging a namespace's I/O to a cgroup (writes 0 to cgroup_id).
    Unbind(UnbindArgs),
    /// Set io.max, io.weight or io.latency of a bound namespace's cgroup for
    /// each disk behind the namespace.
    ///
    /// For NQN passthru the disks are the controller's namespaces, and only
    /// --weight and --latency are taken: io.max does not apply to passthru
    /// subsystems (passthrough requests bypass blk-throttle), so --riops,
    /// --wiops, --rbps and --wbps are refused before anything is written.
    ///
    /// The disks are found from device_path through partitions (their whole
    /// disk), dm and md (their slaves) and loop devices (their backing file's
    /// filesystem device). Rates take K, M, G, T suffixes to the base of
    /// 1000 (20K is 20000, 1G is 1000000000), for bytes and for IOPS alike,
    /// as systemd's IOReadBandwidthMax= and IOReadIOPSMax= parse them (Ki,
    /// Mi, ... are powers of 1024; fractions are rounded: 1.5K is 1500);
    /// "infinity" or "max" removes a limit or target.
    ///
    /// For a slice on a systemd host the settings become the slice's
    /// runtime properties (systemctl set-property --runtime SLICE
    /// IOReadIOPSMax="/dev/sdb 20000", IODeviceWeight=, ...), which survive
    /// systemctl daemon-reload and go at reboot, when restore sets them
    /// again; the command succeeds once the kernel's io files show them.
    /// io.max is per disk: a namespace over several disks (dm striping)
    /// gets each limit on each, and status says what that caps in all.
    Limit(LimitArgs),
    /// Show namespaces, their cgroups, devices, limits and io.stat counters.
    ///
    /// Passthru subsystems in use are listed as NQN passthru, with their
    /// controller's disks, weight, latency target and io.stat; never with
    /// io.max, which does not apply to them (a warning names io.max lines
    /// found on those disks).
    Status(StatusArgs),
    /// Record every bound namespace's (and passthru subsystem's) cgroup and
    /// limits in FILE.
    ///
    /// Cgroups are recorded by path (relative to the cgroup root), devices by
    /// /dev/disk/by-id/ link or /dev name; the file is replaced atomically,
    /// and the file it replaces is kept as FILE.bak. A file with records is
    /// not replaced by an empty configuration (no namespace bound) unless
    /// --force is given.
    Save(SaveArgs),
    /// Apply a file written by save: create missing cgroups, write the
    /// limits, then the cgroup's current ID.
    ///
    /// The whole file is validated before anything changes. Namespaces that
    /// are enabled are disabled and enabled again around the cgroup_id
    /// change (hosts see the namespace go away briefly), unless
    /// --no-reenable is given. Running it again changes nothing. A passthru
    /// record with io.max limits is refused (io.max does not apply to
    /// passthru subsystems) and nothing is restored for it; the other
    /// records are restored.
    Restore(RestoreArgs),
    /// Print the man page (roff), for installing as nvmet-cgroup.8.
    #[command(hide = true)]
    Man,
}

/// A namespace ID (1 and up) or `passthru`.
fn parse_nsid(s: &str) -> Result<NsId, String> {
    s.parse()
}

#[derive(Debug, Args)]
pub struct NsArgs {
    /// Subsystem NQN.
    pub nqn: String,
    /// Namespace ID, or passthru for a passthru subsystem's controller.
    #[arg(value_name = "NSID", value_parser = parse_nsid)]
    pub nsid: NsId,
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct TargetArgs {
    /// The cgroup: a path relative to the cgroup2 mount (e.g. tenant-a) or
    /// an absolute path below it (/sys/fs/cgroup/tenant-a); paths outside
    /// the mount and the root cgroup itself are refused.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// A systemd slice (a-b.slice is a.slice/a-b.slice); created through
    /// systemctl on a systemd host.
    #[arg(long, value_name = "NAME.slice")]
    pub slice: Option<String>,
}

#[derive(Debug, Args)]
pub struct BindArgs {
    #[command(flatten)]
    pub ns: NsArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Create the cgroup (or slice) if it does not exist.
    #[arg(long)]
    pub create: bool,
    /// If the namespace is enabled: disable it, change cgroup_id, enable it
    /// again (restoring the old cgroup_id if that fails).
    #[arg(long)]
    pub reenable: bool,
}

#[derive(Debug, Args)]
pub struct UnbindArgs {
    #[command(flatten)]
    pub ns: NsArgs,
    /// If the namespace is enabled: disable it, clear cgroup_id, enable it again.
    #[arg(long)]
    pub reenable: bool,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("settings").required(true).multiple(true)
    .args(["riops", "wiops", "rbps", "wbps", "weight", "latency"])))]
pub struct LimitArgs {
    #[command(flatten)]
    pub ns: NsArgs,
    /// Read I/Os per second (io.max riops): N, NK, NM, NG (base 1000),
    /// or infinity or max (no limit).
    #[arg(long, value_name = "V", allow_hyphen_values = true, value_parser = limits::parse_iops)]
    pub riops: Option<Limit>,
    /// Write I/Os per second (io.max wiops): N, NK, NM, NG (base 1000),
    /// or infinity or max (no limit).
    #[arg(long, value_name = "V", allow_hyphen_values = true, value_parser = limits::parse_iops)]
    pub wiops: Option<Limit>,
    /// Read bytes per second (io.max rbps): N, NK, NM, NG, NT (base 1000),
    /// or infinity or max (no limit).
    #[arg(long, value_name = "V", allow_hyphen_values = true, value_parser = limits::parse_bytes)]
    pub rbps: Option<Limit>,
    /// Write bytes per second (io.max wbps): N, NK, NM, NG, NT (base 1000),
    /// or infinity or max (no limit).
    #[arg(long, value_name = "V", allow_hyphen_values = true, value_parser = limits::parse_bytes)]
    pub wbps: Option<Limit>,
    /// Device weight (io.weight "MAJ:MIN N"), 1 to 10000, or default.
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = limits::parse_weight)]
    pub weight: Option<Weight>,
    /// io.latency target with a unit: Nus, Nms, Ns, or infinity or max (no
    /// target).
    #[arg(long, value_name = "T", allow_hyphen_values = true, value_parser = limits::parse_latency)]
    pub latency: Option<Latency>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Only this subsystem.
    pub nqn: Option<String>,
    /// Only this namespace (or passthru: only the subsystem's passthru
    /// controller).
    #[arg(value_name = "NSID", requires = "nqn", value_parser = parse_nsid)]
    pub nsid: Option<NsId>,
    /// Print JSON: {"version":1,"namespaces":[...]}.
    #[arg(long)]
    pub json: bool,
}

pub const DEFAULT_FILE: &str = "/etc/nvmet/cgroup.json";

#[derive(Debug, Args)]
pub struct SaveArgs {
    /// The file to write.
    #[arg(default_value = DEFAULT_FILE)]
    pub file: PathBuf,
    /// Replace a file with records even if no namespace is bound now.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The file to read.
    #[arg(default_value = DEFAULT_FILE)]
    pub file: PathBuf,
    /// Fail for enabled namespaces instead of disabling and re-enabling them.
    #[arg(long)]
    pub no_reenable: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
