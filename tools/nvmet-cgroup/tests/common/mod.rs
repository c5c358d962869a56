// SPDX-License-Identifier: GPL-2.0
//! Fixture trees (configfs, cgroupfs, sysfs, devfs) in a tempdir, and a
//! runner for the real binary pointed at them.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const NQN_A: &str = "nqn.2014-08.org.example:a";
pub const NQN_B: &str = "nqn.2014-08.org.example:b";
/// A passthru subsystem (see [`Fixture::make_passthru`]).
pub const NQN_P: &str = "nqn.2014-08.org.example:pt";

/// Device numbers of the fixture's block devices.
#[derive(Clone, Copy)]
pub struct Devs {
    pub sdb: (u32, u32),
    pub sdb1: (u32, u32),
    pub sdc: (u32, u32),
    pub sdd: (u32, u32),
    pub dm0: (u32, u32),
    pub loop0: (u32, u32),
    /// The disk the loop device's backing file lives on.
    pub sde: (u32, u32),
    /// device_path of namespace 4, absent from sysfs.
    pub ghost: (u32, u32),
}

pub const BOOT1: Devs = Devs {
    sdb: (8, 16),
    sdb1: (8, 17),
    sdc: (8, 32),
    sdd: (8, 48),
    dm0: (253, 0),
    loop0: (7, 0),
    sde: (8, 64),
    ghost: (8, 200),
};

/// After a "reboot" the disks come up with other numbers.
pub const BOOT2: Devs = Devs {
    sdb: (8, 96),
    sdb1: (8, 97),
    sdc: (8, 112),
    sdd: (8, 128),
    dm0: (253, 3),
    loop0: (7, 5),
    sde: (8, 144),
    ghost: (8, 201),
};

/// Device numbers of a passthru subsystem's NVMe controller `nvme0`: its
/// character device, its two namespaces' disks (per-path disks
/// `nvme0c0n1`, `nvme0c0n2` with multipath), the multipath heads
/// `nvme0n1`, `nvme0n2` (not under the controller), and its generic
/// character device `ng0n1` (not a disk).
#[derive(Clone, Copy)]
pub struct CtrlDevs {
    pub ctrl: (u32, u32),
    pub n1: (u32, u32),
    pub n2: (u32, u32),
    pub head1: (u32, u32),
    pub head2: (u32, u32),
    pub ng: (u32, u32),
    /// Native multipath: the disks under the controller are nvme0c0nN.
    pub multipath: bool,
}

pub const CTRL1: CtrlDevs = CtrlDevs {
    ctrl: (241, 0),
    n1: (259, 0),
    n2: (259, 1),
    head1: (259, 4),
    head2: (259, 5),
    ng: (242, 0),
    multipath: false,
};

/// The same controller after a reboot, with other numbers.
pub const CTRL2: CtrlDevs = CtrlDevs {
    ctrl: (241, 3),
    n1: (259, 7),
    n2: (259, 8),
    head1: (259, 9),
    head2: (259, 10),
    ng: (242, 3),
    multipath: false,
};

pub fn d((a, b): (u32, u32)) -> String {
    format!("{a}:{b}")
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
}

fn write(p: &Path, s: &str) {
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(p, s).unwrap();
}

impl Fixture {
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
    pub fn p(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }
    pub fn cg(&self, rel: &str) -> PathBuf {
        self.p("cgroup").join(rel)
    }
    pub fn ns(&self, nqn: &str, nsid: u32) -> PathBuf {
        self.p(&format!("configfs/subsystems/{nqn}/namespaces/{nsid}"))
    }
    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.p(rel)).unwrap()
    }
    pub fn ino(&self, cg_rel: &str) -> u64 {
        fs::metadata(self.cg(cg_rel)).unwrap().ino()
    }
    pub fn cgroup_id(&self, nqn: &str, nsid: u32) -> u64 {
        fs::read_to_string(self.ns(nqn, nsid).join("cgroup_id"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// A cgroup directory with the files the tool reads and writes.
    pub fn make_cgroup(&self, rel: &str, controllers: &str) {
        let dir = self.cg(rel);
        fs::create_dir_all(&dir).unwrap();
        for (f, c) in cgroup_files(controllers) {
            let p = dir.join(f);
            if !p.exists() {
                fs::write(p, c).unwrap();
            }
        }
    }

    /// Make the fixture a systemd host (`RUNDIR/systemd/system`).
    pub fn boot_with_systemd(&self) {
        fs::create_dir_all(self.p("run/systemd/system")).unwrap();
    }

    pub fn make_ns(&self, nqn: &str, nsid: u32, device_path: &Path, enabled: bool, id: u64) {
        let dir = self.ns(nqn, nsid);
        write(
            &dir.join("device_path"),
            &format!("{}\n", device_path.display()),
        );
        write(&dir.join("enable"), if enabled { "1\n" } else { "0\n" });
        write(&dir.join("buffered_io"), "0\n");
        write(&dir.join("cgroup_id"), &format!("{id}\n"));
    }

    /// SYSFS/dev/block and SYSFS/devices, DEVFS nodes (plain files) and the
    /// device map that says what those nodes are.
    pub fn make_devices(&self, devs: &Devs) {
        let sys = self.p("sys");
        let blk = sys.join("devices/virtual/block");
        let disk = |name: &str, dev: (u32, u32)| -> PathBuf {
            let dir = blk.join(name);
            write(&dir.join("dev"), &format!("{}\n", d(dev)));
            write(
                &dir.join("uevent"),
                &format!(
                    "MAJOR={}\nMINOR={}\nDEVNAME={name}\nDEVTYPE=disk\n",
                    dev.0, dev.1
                ),
            );
            dir
        };
        let sdb = disk("sdb", devs.sdb);
        let sdb1 = sdb.join("sdb1");
        write(&sdb1.join("dev"), &format!("{}\n", d(devs.sdb1)));
        write(&sdb1.join("partition"), "1\n");
        write(&sdb1.join("uevent"), "DEVNAME=sdb1\nDEVTYPE=partition\n");
        // Stable identities, as the kernel shows them: a SCSI disk's WWID,
        // a virtio disk's serial, an LVM volume's dm UUID; sdd has none.
        write(&sdb.join("device/wwid"), "naa.5000c500a1b2c3d4\n");
        let sdc = disk("sdc", devs.sdc);
        write(&sdc.join("serial"), "SERIAL-C\n");
        let sdd = disk("sdd", devs.sdd);
        let dm0 = disk("dm-0", devs.dm0);
        write(&dm0.join("dm/name"), "vg0-a\n");
        write(&dm0.join("dm/uuid"), "LVM-vg0a\n");
        fs::create_dir_all(dm0.join("slaves")).unwrap();
        symlink(&sdc, dm0.join("slaves/sdc")).unwrap();
        symlink(&sdd, dm0.join("slaves/sdd")).unwrap();
        let sde = disk("sde", devs.sde);
        let loop0 = disk("loop0", devs.loop0);
        let backing = self.p("srv/backing.img");
        write(&backing, "data");
        write(
            &loop0.join("loop/backing_file"),
            &format!("{}\n", backing.display()),
        );
        let by_dev = sys.join("dev/block");
        fs::create_dir_all(&by_dev).unwrap();
        for (dir, dev) in [
            (&sdb, devs.sdb),
            (&sdb1, devs.sdb1),
            (&sdc, devs.sdc),
            (&sdd, devs.sdd),
            (&dm0, devs.dm0),
            (&sde, devs.sde),
            (&loop0, devs.loop0),
        ] {
            let rel =
                Path::new("../../devices/virtual/block").join(dir.strip_prefix(&blk).unwrap());
            symlink(rel, by_dev.join(d(dev))).unwrap();
        }
        // DEVFS: nodes are plain files here; the device map gives their numbers.
        let mut map = BTreeMap::new();
        for (name, dev) in [
            ("sdb", devs.sdb),
            ("sdb1", devs.sdb1),
            ("sdc", devs.sdc),
            ("sdd", devs.sdd),
            ("dm-0", devs.dm0),
            ("loop0", devs.loop0),
            ("ghost", devs.ghost),
        ] {
            let node = self.p("dev").join(name);
            write(&node, "");
            map.insert(
                node.display().to_string(),
                serde_json::json!({ "block": d(dev) }),
            );
        }
        map.insert(
            backing.display().to_string(),
            serde_json::json!({ "file": d(devs.sde) }),
        );
        fs::create_dir_all(self.p("dev/disk/by-id")).unwrap();
        symlink("../../sdb", self.p("dev/disk/by-id/wwn-0x5000c500a1b2c3d4")).unwrap();
        symlink(
            "../../sdb1",
            self.p("dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1"),
        )
        .unwrap();
        write(
            &self.p("devmap.json"),
            &serde_json::to_string_pretty(&map).unwrap(),
        );
    }

    /// Remove what make_devices made (the devices come back with new numbers).
    pub fn remove_devices(&self) {
        for d in ["sys/devices", "sys/dev", "dev", "srv"] {
            fs::remove_dir_all(self.p(d)).unwrap();
        }
        fs::remove_file(self.p("devmap.json")).unwrap();
    }

    pub fn make_cgroups(&self) {
        self.make_cgroup("", "cpu io memory\n");
        self.make_cgroup("tenant-a", "io\n");
        self.make_cgroup("tenants.slice", "io\n");
        self.make_cgroup("tenants.slice/tenants-b.slice", "io\n");
        self.make_cgroup("noio", "memory\n");
        self.make_cgroup("noio/child", "\n");
        fs::create_dir_all(self.cg("notacg")).unwrap();
    }

    /// The standard fixture.
    pub fn new() -> Fixture {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        for d in ["configfs/subsystems", "debug", "run", "sys/module"] {
            fs::create_dir_all(f.p(d)).unwrap();
        }
        f.make_cgroups();
        f.make_devices(&BOOT1);
        let dev = f.p("dev");
        f.make_ns(NQN_A, 1, &dev.join("sdb1"), false, 0);
        f.make_ns(NQN_A, 2, &dev.join("dm-0"), false, 0);
        f.make_ns(NQN_A, 3, &dev.join("loop0"), false, 0);
        f.make_ns(NQN_A, 4, &dev.join("ghost"), false, f.ino("tenant-a"));
        f.make_ns(NQN_B, 1, &dev.join("sdb"), true, 0);
        // Every subsystem has a passthru directory, unused but for a
        // passthru subsystem.
        for nqn in [NQN_A, NQN_B] {
            f.make_passthru_dir(nqn, "", false, 0);
        }
        f
    }

    pub fn pt(&self, nqn: &str) -> PathBuf {
        self.p(&format!("configfs/subsystems/{nqn}/passthru"))
    }

    pub fn pt_cgroup_id(&self, nqn: &str) -> u64 {
        fs::read_to_string(self.pt(nqn).join("cgroup_id"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// A subsystem's `passthru/` as nvmet makes it.
    pub fn make_passthru_dir(&self, nqn: &str, device_path: &str, enabled: bool, id: u64) {
        let dir = self.pt(nqn);
        fs::create_dir_all(dir.with_file_name("namespaces")).unwrap();
        write(&dir.join("device_path"), &format!("{device_path}\n"));
        write(&dir.join("enable"), if enabled { "1\n" } else { "0\n" });
        write(&dir.join("cgroup_id"), &format!("{id}\n"));
        write(&dir.join("admin_timeout"), "0\n");
        write(&dir.join("io_timeout"), "0\n");
        write(&dir.join("clear_ids"), "1\n");
    }

    /// The passthru subsystem NQN_P over controller nvme0 (`devs`), with
    /// `enabled` and cgroup_id 0; its sysfs (the controller, its disks,
    /// SYSFS/dev/char and SYSFS/dev/block links), DEVFS nodes, by-id links
    /// for the plain disks, and their device map entries.
    pub fn make_passthru(&self, devs: &CtrlDevs, enabled: bool) {
        let sys = self.p("sys");
        let ctrl = sys.join("devices/virtual/nvme-fabrics/ctl/nvme0");
        write(&ctrl.join("dev"), &format!("{}\n", d(devs.ctrl)));
        write(&ctrl.join("serial"), "PT-SERIAL-0\n");
        write(&ctrl.join("uevent"), "MAJOR=241\nDEVNAME=nvme0\n");
        let heads = sys.join("devices/virtual/nvme-subsystem/nvme-subsys0");
        let mut block = Vec::new();
        for (i, (dev, head, wwid)) in [
            (devs.n1, devs.head1, "eui.00000001"),
            (devs.n2, devs.head2, "eui.00000002"),
        ]
        .into_iter()
        .enumerate()
        {
            let n = i + 1;
            let name = if devs.multipath {
                format!("nvme0c0n{n}")
            } else {
                format!("nvme0n{n}")
            };
            let dir = ctrl.join(&name);
            write(&dir.join("dev"), &format!("{}\n", d(dev)));
            write(&dir.join("wwid"), &format!("{wwid}\n"));
            write(
                &dir.join("uevent"),
                &format!("DEVNAME={name}\nDEVTYPE=disk\n"),
            );
            block.push((dir, dev, name));
            if devs.multipath {
                let hdir = heads.join(format!("nvme0n{n}"));
                write(&hdir.join("dev"), &format!("{}\n", d(head)));
                write(&hdir.join("wwid"), &format!("{wwid}\n"));
                write(
                    &hdir.join("uevent"),
                    &format!("DEVNAME=nvme0n{n}\nDEVTYPE=disk\n"),
                );
                block.push((hdir, head, format!("nvme0n{n}")));
            }
        }
        let ng = ctrl.join("ng0n1");
        write(&ng.join("dev"), &format!("{}\n", d(devs.ng)));
        for (kind, dir, dev) in [("char", &ctrl, devs.ctrl), ("char", &ng, devs.ng)] {
            let link = sys.join("dev").join(kind).join(d(dev));
            fs::create_dir_all(link.parent().unwrap()).unwrap();
            symlink(dir, link).unwrap();
        }
        let mut map: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(self.p("devmap.json")).unwrap()).unwrap();
        for (dir, dev, name) in &block {
            symlink(dir, sys.join("dev/block").join(d(*dev))).unwrap();
            // Per-path disks have no device node.
            if name.contains('c') {
                continue;
            }
            let node = self.p("dev").join(name);
            write(&node, "");
            map[node.display().to_string()] = serde_json::json!({ "block": d(*dev) });
            if !devs.multipath || name.starts_with("nvme0n") {
                let wwid = fs::read_to_string(dir.join("wwid")).unwrap();
                symlink(
                    format!("../../{name}"),
                    self.p("dev/disk/by-id")
                        .join(format!("nvme-{}", wwid.trim())),
                )
                .unwrap();
            }
        }
        let node = self.p("dev/nvme0");
        write(&node, "");
        map[node.display().to_string()] = serde_json::json!({ "char": d(devs.ctrl) });
        let ngnode = self.p("dev/ng0n1");
        write(&ngnode, "");
        map[ngnode.display().to_string()] = serde_json::json!({ "char": d(devs.ng) });
        write(&self.p("devmap.json"), &map.to_string());
        self.make_passthru_dir(NQN_P, &node.display().to_string(), enabled, 0);
    }

    pub fn load_module(&self) {
        fs::create_dir_all(self.p("sys/module/nvmet_cgroup")).unwrap();
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_nvmet-cgroup"));
        // The hidden root options of a debug build (what `cargo test` runs).
        for (opt, dir) in [
            ("--configfs", "configfs"),
            ("--cgroupfs", "cgroup"),
            ("--sysfs", "sys"),
            ("--devfs", "dev"),
            ("--debugfs", "debug"),
            ("--rundir", "run"),
            ("--dev-map", "devmap.json"),
        ] {
            c.arg(opt).arg(self.p(dir));
        }
        c
    }

    /// Run the binary: (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        self.run_cmd(self.cmd().args(args))
    }

    /// Run the binary with `fake` first on PATH.
    pub fn run_with(&self, fake: &FakeSystemctl, args: &[&str]) -> (i32, String, String) {
        self.run_cmd(self.cmd().env("PATH", fake.path_env()).args(args))
    }

    fn run_cmd(&self, c: &mut Command) -> (i32, String, String) {
        let o = c.output().unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    }

    /// Run and require success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "{args:?} failed: {err}\n{out}");
        out
    }

    /// Every file, directory and symlink with its content.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.root().to_path_buf()];
        while let Some(p) = stack.pop() {
            let md = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(self.root()).unwrap().to_path_buf();
            if md.file_type().is_symlink() {
                out.insert(rel, format!("-> {}", fs::read_link(&p).unwrap().display()));
            } else if md.is_dir() {
                out.insert(rel, format!("dir {}", md.ino()));
                for e in fs::read_dir(&p).unwrap() {
                    stack.push(e.unwrap().path());
                }
            } else {
                out.insert(rel, fs::read_to_string(&p).unwrap());
            }
        }
        out
    }

    /// The paths (relative to the root) whose content differs from
    /// `before`, a [`Fixture::snapshot`], or that are new since.
    pub fn changed_since(&self, before: &BTreeMap<PathBuf, String>) -> Vec<String> {
        self.snapshot()
            .iter()
            .filter(|(k, v)| before.get(*k) != Some(*v))
            .map(|(k, _)| k.display().to_string())
            .collect()
    }
}

/// The files of a fixture cgroup (as [`Fixture::make_cgroup`] makes them).
pub fn cgroup_files(controllers: &str) -> [(&'static str, &str); 7] {
    [
        ("cgroup.procs", ""),
        ("cgroup.controllers", controllers),
        ("cgroup.subtree_control", ""),
        ("io.max", ""),
        ("io.weight", "default 100\n"),
        ("io.latency", ""),
        ("io.stat", ""),
    ]
}

/// A shell-quoted word.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A fake `systemctl` (a shell script in a directory of its own, outside
/// the fixture tree) that appends each invocation to a log, one line with
/// every argument in brackets, then runs `script`.
pub struct FakeSystemctl {
    pub dir: tempfile::TempDir,
}

impl FakeSystemctl {
    pub fn new(script: &str) -> FakeSystemctl {
        let dir = tempfile::tempdir().unwrap();
        let log = sh_quote(&dir.path().join("calls.log").display().to_string());
        let text = format!(
            "#!/bin/sh\n\
             for a in \"$@\"; do printf '[%s]' \"$a\"; done >>{log}\n\
             printf '\\n' >>{log}\n\
             {script}\n"
        );
        let path = dir.path().join("systemctl");
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        FakeSystemctl { dir }
    }

    /// A systemctl that, on `start`, creates the directories `dirs` (paths
    /// relative to `fx`'s cgroup root, top-down, as systemd makes a slice's
    /// levels) with the files of a fixture cgroup.
    /// As systemd with `IOAccounting=yes`, it also enables io in the
    /// `cgroup.subtree_control` of the root and of every level above the
    /// last (writing `io`, as the kernel shows it, where the CLI would
    /// append `+io`).
    pub fn creating(fx: &Fixture, dirs: &[&str], controllers: &str) -> FakeSystemctl {
        let mut script = String::from("[ \"$1\" = start ] || exit 0\n");
        let root = sh_quote(&fx.cg("").display().to_string());
        script.push_str(&format!("printf 'io\\n' >{root}/cgroup.subtree_control\n"));
        for (i, rel) in dirs.iter().enumerate() {
            let d = sh_quote(&fx.cg(rel).display().to_string());
            script.push_str(&format!("mkdir {d} || exit 1\n"));
            for (f, c) in cgroup_files(controllers) {
                script.push_str(&format!("printf '%s' {} >{d}/{f}\n", sh_quote(c)));
            }
            if i + 1 < dirs.len() {
                script.push_str(&format!("printf 'io\\n' >{d}/cgroup.subtree_control\n"));
            }
        }
        FakeSystemctl::new(&script)
    }

    /// A systemctl that prints `msg` on stderr and exits 1 when called
    /// with `verb` (and does nothing but log otherwise).
    pub fn failing(verb: &str, msg: &str) -> FakeSystemctl {
        FakeSystemctl::new(&format!(
            "[ \"$1\" = {} ] || exit 0\necho {} >&2\nexit 1",
            sh_quote(verb),
            sh_quote(msg)
        ))
    }

    /// The invocations so far, one per line.
    pub fn calls(&self) -> Vec<String> {
        match fs::read_to_string(self.dir.path().join("calls.log")) {
            Ok(s) => s.lines().map(str::to_string).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// PATH with this directory first.
    pub fn path_env(&self) -> std::ffi::OsString {
        let mut dirs = vec![self.dir.path().to_path_buf()];
        if let Some(p) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&p));
        }
        std::env::join_paths(dirs).unwrap()
    }
}

/// The last line of a file.
pub fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}
