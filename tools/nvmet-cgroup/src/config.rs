// SPDX-License-Identifier: GPL-2.0
//! The save/restore file (`/etc/nvmet/cgroup.json`, version 1): parsing and
//! validating it whole before anything is applied.
//!
//! ```json
//! {
//!   "version": 1,
//!   "namespaces": [
//!     {
//!       "nqn": "nqn.2014-08.org.example:a",
//!       "nsid": 1,
//!       "cgroup": "tenants.slice/tenants-a.slice",
//!       "slice": "tenants-a.slice",
//!       "device_path": "/dev/vg0/a",
//!       "stack": [ "dm uuid=LVM-Kq3... > partition 1 > disk wwid=naa.5000c500a1b2c3d4" ],
//!       "devices": [
//!         { "path": "/dev/disk/by-id/wwn-0x5000", "riops": 1000, "wbps": 20971520,
//!           "weight": 200, "latency_us": 5000 }
//!       ]
//!     },
//!     {
//!       "nqn": "nqn.2014-08.org.example:pt",
//!       "nsid": "passthru",
//!       "cgroup": "tenant-p",
//!       "device_path": "/dev/nvme0",
//!       "stack": [ "nvme ctrl serial=S123 > disk wwid=eui.0025..." ],
//!       "devices": [ { "path": "/dev/disk/by-id/nvme-eui.0025...", "weight": 300 } ]
//!     }
//!   ]
//! }
//! ```
//!
//! `nsid` is a number, or "passthru" for a passthru subsystem's controller
//! (its `device_path` the controller's character device, its `devices` the
//! controller's disks, its `stack` chains `nvme ctrl serial=` or `name=`,
//! then the disk).  A passthru record takes no io.max keys (`riops`,
//! `wiops`, `rbps`, `wbps`): passthrough requests bypass blk-throttle, and
//! `restore` refuses such a record.
//!
//! `cgroup` is relative to the cgroup root (IDs are not stable across
//! reboots); `slice` is present when the cgroup is a systemd slice.
//! `stack` is how `device_path` reached the disks when the file was saved,
//! one chain per disk, each layer by an identity that survives a reboot
//! (`dm uuid=`/`dm name=`, `md uuid=`, `partition N`, `loop file=`, and the
//! disk's `wwid=`, `serial=` or, lacking both, `name=`); `restore` refuses
//! a namespace whose stack is now different.  Device
//! limit keys are optional (absent: not set by restore); `riops`, `wiops`
//! are I/Os per second, `rbps`, `wbps` bytes per second, `weight` 1..10000,
//! `latency_us` the io.latency target in microseconds.

use std::collections::BTreeSet;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cgroupfs;
use crate::configfs::{self, NsId};
use crate::limits::{DevLimits, WEIGHT_MAX, WEIGHT_MIN};

pub const VERSION: u64 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveFile {
    pub version: u64,
    pub namespaces: Vec<Record>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub nqn: String,
    pub nsid: NsId,
    pub cgroup: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<String>,
    pub device_path: String,
    /// The device stack from `device_path` to the disks, by stable
    /// identities, when saved; restore refuses the record if it changed.
    /// Absent in files saved before it was recorded (then not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<Vec<String>>,
    #[serde(default)]
    pub devices: Vec<DeviceRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceRecord {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub riops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wiops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rbps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wbps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
}

impl DeviceRecord {
    pub fn new(path: String, l: &DevLimits) -> DeviceRecord {
        DeviceRecord {
            path,
            riops: l.riops,
            wiops: l.wiops,
            rbps: l.rbps,
            wbps: l.wbps,
            weight: l.weight,
            latency_us: l.latency_us,
        }
    }

    pub fn limits(&self) -> DevLimits {
        DevLimits {
            riops: self.riops,
            wiops: self.wiops,
            rbps: self.rbps,
            wbps: self.wbps,
            weight: self.weight,
            latency_us: self.latency_us,
        }
    }
}

impl Record {
    /// "NQN nsid N" or "NQN passthru", for messages.
    pub fn label(&self) -> String {
        configfs::label(&self.nqn, self.nsid)
    }

    pub fn target(&self) -> cgroupfs::Target {
        match &self.slice {
            Some(s) => cgroupfs::Target::Slice(s.clone()),
            None => cgroupfs::Target::Path(self.cgroup.clone()),
        }
    }

    fn validate(&self) -> Result<()> {
        configfs::check_nqn(&self.nqn)?;
        if self.nsid == NsId::Ns(0) {
            bail!("nsid 0 is not a namespace");
        }
        cgroupfs::check_rel(&self.cgroup)?;
        if let Some(s) = &self.slice {
            let p = cgroupfs::slice_path(s)?;
            if p != self.cgroup {
                bail!("slice {s} is at \"{p}\", not at \"{}\"", self.cgroup);
            }
        }
        if let Some(stack) = &self.stack {
            if stack.is_empty() || stack.iter().any(|s| s.trim().is_empty()) {
                bail!("\"stack\" must list at least one non-empty chain");
            }
        }
        let mut seen = BTreeSet::new();
        for d in &self.devices {
            if !d.path.starts_with('/') {
                bail!("device path \"{}\" is not absolute", d.path);
            }
            if !seen.insert(d.path.as_str()) {
                bail!("device {} is listed twice", d.path);
            }
            let nonzero = [d.riops, d.wiops, d.rbps, d.wbps, d.latency_us];
            if nonzero.iter().flatten().any(|v| *v == 0) {
                bail!("device {}: limits must be at least 1", d.path);
            }
            let iops_cap = u64::from(u32::MAX) - 1;
            if [d.riops, d.wiops].iter().flatten().any(|v| *v > iops_cap) {
                bail!("device {}: iops limits are at most {iops_cap}", d.path);
            }
            if [d.rbps, d.wbps].iter().flatten().any(|v| *v == u64::MAX) {
                bail!("device {}: bps limits are at most {}", d.path, u64::MAX - 1);
            }
            if let Some(w) = d.weight {
                if !(WEIGHT_MIN..=WEIGHT_MAX).contains(&w) {
                    bail!(
                        "device {}: weight {w} is not in {WEIGHT_MIN}..{WEIGHT_MAX}",
                        d.path
                    );
                }
            }
        }
        Ok(())
    }
}

/// Parse and validate a whole save file.
pub fn parse(text: &str) -> Result<SaveFile> {
    let raw: serde_json::Value =
        serde_json::from_str(text).map_err(|e| anyhow!("malformed JSON: {e}"))?;
    match raw.get("version") {
        Some(v) if v.as_u64() == Some(VERSION) => {}
        Some(v) => bail!("unsupported version {v} (this nvmet-cgroup reads version {VERSION})"),
        None => bail!("no \"version\" field (expected {VERSION})"),
    }
    let file: SaveFile =
        serde_json::from_value(raw).map_err(|e| anyhow!("invalid contents: {e}"))?;
    let mut seen = BTreeSet::new();
    for (i, r) in file.namespaces.iter().enumerate() {
        r.validate()
            .with_context(|| format!("namespaces[{i}] ({})", r.label()))?;
        if !seen.insert((r.nqn.as_str(), r.nsid)) {
            bail!("namespaces[{i}]: {} is listed twice", r.label());
        }
    }
    Ok(file)
}

/// The file's text (pretty-printed, newline-terminated).
pub fn render(file: &SaveFile) -> Result<String> {
    let mut s = serde_json::to_string_pretty(file).context("encoding the saved state")?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"version":1,"namespaces":[{"nqn":"nqn.a","nsid":1,
        "cgroup":"t.slice/t-a.slice","slice":"t-a.slice","device_path":"/dev/sdb1",
        "devices":[{"path":"/dev/disk/by-id/wwn-1","riops":1000,"weight":200}]}]}"#;

    #[test]
    fn round_trip() -> Result<()> {
        let f = parse(GOOD)?;
        assert_eq!(f.namespaces[0].devices[0].riops, Some(1000));
        assert_eq!(parse(&render(&f)?)?, f);
        Ok(())
    }

    /// A passthru record: `"nsid": "passthru"`, read and written back.
    #[test]
    fn passthru_record() -> Result<()> {
        let text = r#"{"version":1,"namespaces":[{"nqn":"nqn.p","nsid":"passthru",
            "cgroup":"t","device_path":"/dev/nvme0","devices":[{"path":"/dev/nvme0n1","weight":300}]}]}"#;
        let f = parse(text)?;
        assert_eq!(f.namespaces[0].nsid, NsId::Passthru);
        assert_eq!(f.namespaces[0].label(), "nqn.p passthru");
        let out = render(&f)?;
        assert!(out.contains(r#""nsid": "passthru""#), "{out}");
        assert_eq!(parse(&out)?, f);
        for bad in [
            r#""nsid":"pt""#,
            r#""nsid":0"#,
            r#""nsid":-1"#,
            r#""nsid":null"#,
        ] {
            let t = text.replace(r#""nsid":"passthru""#, bad);
            assert!(parse(&t).is_err(), "{bad}");
        }
        Ok(())
    }

    #[test]
    fn rejects() {
        let rec = |body: &str| {
            format!(
                r#"{{"version":1,"namespaces":[{{"nqn":"nqn.a","nsid":1,"device_path":"/x",{body}}}]}}"#
            )
        };
        let cases: Vec<(String, &str)> = vec![
            ("".into(), "malformed JSON"),
            ("{".into(), "malformed JSON"),
            ("[]".into(), "no \"version\""),
            (r#"{"namespaces":[]}"#.into(), "no \"version\""),
            (
                r#"{"version":2,"namespaces":[]}"#.into(),
                "unsupported version 2",
            ),
            (
                r#"{"version":"1","namespaces":[]}"#.into(),
                "unsupported version",
            ),
            (r#"{"version":1}"#.into(), "invalid contents"),
            (
                r#"{"version":1,"namespaces":[],"extra":1}"#.into(),
                "invalid contents",
            ),
            (rec(r#""cgroup":"/abs""#), "relative"),
            (rec(r#""cgroup":"a/../b""#), "\"..\""),
            (
                rec(r#""cgroup":"a.slice","slice":"b.slice""#),
                "slice b.slice",
            ),
            (
                rec(r#""cgroup":"x","devices":[{"path":"sdb","riops":1}]"#),
                "not absolute",
            ),
            (
                rec(r#""cgroup":"x","devices":[{"path":"/dev/a","riops":0}]"#),
                "at least 1",
            ),
            (
                rec(r#""cgroup":"x","devices":[{"path":"/dev/a","weight":20000}]"#),
                "weight",
            ),
            (
                rec(r#""cgroup":"x","devices":[{"path":"/dev/a","riops":-1}]"#),
                "invalid contents",
            ),
            (
                rec(r#""cgroup":"x","devices":[{"path":"/dev/a","bogus":1}]"#),
                "invalid contents",
            ),
        ];
        for (text, want) in cases {
            match parse(&text) {
                Ok(_) => panic!("accepted {text}"),
                Err(e) => {
                    let msg = format!("{e:#}");
                    assert!(msg.contains(want), "{text}: {msg}");
                    assert!(!msg.contains('\n'), "{text}: {msg}");
                }
            }
        }
        let dup = r#"{"version":1,"namespaces":[
            {"nqn":"q","nsid":1,"cgroup":"a","device_path":"/x"},
            {"nqn":"q","nsid":1,"cgroup":"b","device_path":"/x"}]}"#;
        assert!(parse(dup).is_err());
    }
}
