// SPDX-License-Identifier: GPL-2.0
//! Filesystem roots: every path the tool reads or writes starts from here.

use std::path::{Path, PathBuf};

use crate::devnum::DevT;

/// The roots of the trees the tool works on.  The defaults are the real
/// mount points; tests point them at fixture trees in a tempdir (through the
/// hidden global options or the `NVMET_CGROUP_*` environment variables).
#[derive(Debug, Clone)]
pub struct Roots {
    /// nvmet's configfs directory (`/sys/kernel/config/nvmet`).
    pub configfs: PathBuf,
    /// The cgroup v2 mount (`/sys/fs/cgroup`).
    pub cgroupfs: PathBuf,
    /// sysfs (`/sys`).
    pub sysfs: PathBuf,
    /// devtmpfs (`/dev`); saved device paths are written as `/dev/...` and
    /// looked up below this root.
    pub devfs: PathBuf,
    /// debugfs (`/sys/kernel/debug`).
    pub debugfs: PathBuf,
    /// `/run`, where `systemd/system` says that systemd is the init system.
    pub rundir: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            configfs: PathBuf::from("/sys/kernel/config/nvmet"),
            cgroupfs: PathBuf::from("/sys/fs/cgroup"),
            sysfs: PathBuf::from("/sys"),
            devfs: PathBuf::from("/dev"),
            debugfs: PathBuf::from("/sys/kernel/debug"),
            rundir: PathBuf::from("/run"),
        }
    }
}

impl Roots {
    /// `SYSFS/module/nvmet_cgroup`, present while the module is loaded.
    pub fn module_dir(&self) -> PathBuf {
        self.sysfs.join("module/nvmet_cgroup")
    }

    pub fn module_loaded(&self) -> bool {
        self.module_dir().is_dir()
    }

    /// True when systemd manages the cgroup tree (`/run/systemd/system`).
    pub fn systemd_booted(&self) -> bool {
        self.rundir.join("systemd/system").is_dir()
    }

    /// `SYSFS/dev/block/MAJ:MIN`.
    pub fn dev_block(&self, dev: DevT) -> PathBuf {
        self.sysfs.join("dev/block").join(dev.to_string())
    }

    /// `SYSFS/dev/char/MAJ:MIN`.
    pub fn dev_char(&self, dev: DevT) -> PathBuf {
        self.sysfs.join("dev/char").join(dev.to_string())
    }

    /// `DEBUGFS/nvmet_cgroup/namespaces`: the module's status file.
    pub fn status_file(&self) -> PathBuf {
        self.debugfs.join("nvmet_cgroup/namespaces")
    }

    /// Map a recorded device path (`/dev/...`) into DEVFS; other paths are
    /// used as they are.
    pub fn in_devfs(&self, recorded: &str) -> PathBuf {
        match recorded.strip_prefix("/dev/") {
            Some(rest) => self.devfs.join(rest),
            None => PathBuf::from(recorded),
        }
    }

    /// The cgroup directory for a path relative to the cgroup root.
    pub fn cgroup_dir(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.cgroupfs.clone()
        } else {
            self.cgroupfs.join(rel)
        }
    }

    /// The inverse of [`Roots::cgroup_dir`] for paths below CGROUPFS.
    pub fn cgroup_rel(&self, dir: &Path) -> Option<String> {
        let rel = dir.strip_prefix(&self.cgroupfs).ok()?;
        Some(rel.to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devfs_mapping() {
        let r = Roots {
            devfs: PathBuf::from("/tmp/x/dev"),
            ..Roots::default()
        };
        let cases = [
            ("/dev/sdb", "/tmp/x/dev/sdb"),
            ("/dev/disk/by-id/wwn-1", "/tmp/x/dev/disk/by-id/wwn-1"),
            ("/srv/img", "/srv/img"),
        ];
        for (input, want) in cases {
            assert_eq!(r.in_devfs(input), PathBuf::from(want), "{input}");
        }
    }
}
