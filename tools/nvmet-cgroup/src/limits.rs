// SPDX-License-Identifier: GPL-2.0
//! Limit values (`10K`, `20M`, `infinity`, `max`, `5ms`) and the cgroup io files:
//! parsing `io.max`, `io.weight`, `io.latency`, `io.stat` and formatting the
//! lines written to them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::device::DevT;

/// An io.max limit: a number or `max` (no limit; `infinity` or `max` on the
/// command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Max,
    Value(u64),
}

/// An io.weight setting for a device: a weight or `default` (the cgroup's
/// default weight applies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    Default,
    Value(u32),
}

/// An io.latency target: microseconds or `max` (no target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    Max,
    Usec(u64),
}

pub const WEIGHT_MIN: u32 = 1;
pub const WEIGHT_MAX: u32 = 10000;

fn digits(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err("a number is missing".to_string());
    }
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("\"{s}\" is not a whole number"));
    }
    s.parse::<u64>().map_err(|_| format!("{s} is too large"))
}

/// The words for "no limit": systemd's `infinity` and the kernel's `max`.
fn is_unlimited(s: &str) -> bool {
    s == "infinity" || s == "max"
}

/// A number with an optional unit, parsed by the `parse-size` crate in its
/// decimal mode: K, M, G, T, P and E are powers of 1000 (20K is 20000), as
/// systemd.resource-control(5) parses IOReadBandwidthMax= and
/// IOReadIOPSMax=; KiB, MiB, ... are powers of 1024; the unit is
/// case-insensitive, a trailing B optional, and fractions are rounded to
/// the nearest whole number (1.5K is 1500).  Or `infinity` or `max` (no
/// limit).  0 is rejected (the kernel refuses it; `infinity` removes a
/// limit), as is anything above `cap`.
fn parse_scaled(s: &str, cap: u64) -> Result<Limit, String> {
    if is_unlimited(s) {
        return Ok(Limit::Max);
    }
    let v = SIZE
        .parse_size(s)
        .map_err(|e| match e {
            parse_size::Error::PosOverflow => format!("\"{s}\" is too large (at most {cap})"),
            _ => format!("\"{s}\" is not a number with an optional unit such as 20K (base 1000) or 1Mi (base 1024), nor infinity or max"),
        })?;
    if v > cap {
        return Err(format!("\"{s}\" is too large (at most {cap})"));
    }
    if v == 0 {
        return Err(format!(
            "\"{s}\": must be at least 1 (use infinity or max to remove the limit)"
        ));
    }
    Ok(Limit::Value(v))
}

/// Decimal units, as systemd.
const SIZE: parse_size::Config = parse_size::Config::new().with_decimal();

/// A bytes-per-second limit (`--rbps`, `--wbps`).
pub fn parse_bytes(s: &str) -> Result<Limit, String> {
    parse_scaled(s, u64::MAX - 1)
}

/// An I/O-per-second limit (`--riops`, `--wiops`); the kernel keeps these
/// in 32 bits.
pub fn parse_iops(s: &str) -> Result<Limit, String> {
    parse_scaled(s, u64::from(u32::MAX) - 1)
}

/// `1`..`10000` or `default`.
pub fn parse_weight(s: &str) -> Result<Weight, String> {
    if s == "default" {
        return Ok(Weight::Default);
    }
    let n = digits(s).map_err(|e| format!("\"{s}\": {e}"))?;
    if !(u64::from(WEIGHT_MIN)..=u64::from(WEIGHT_MAX)).contains(&n) {
        return Err(format!(
            "\"{s}\": a weight is {WEIGHT_MIN} to {WEIGHT_MAX} (or default)"
        ));
    }
    Ok(Weight::Value(n as u32))
}

/// `Nus`, `Nms`, `Ns`, or `infinity` or `max` (no target); a unit is
/// required.
pub fn parse_latency(s: &str) -> Result<Latency, String> {
    if is_unlimited(s) {
        return Ok(Latency::Max);
    }
    let (num, mult) = if let Some(n) = s.strip_suffix("us") {
        (n, 1)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1_000)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1_000_000)
    } else {
        return Err(format!(
            "\"{s}\": give a unit: us, ms or s (e.g. 5ms), or infinity or max"
        ));
    };
    let n = digits(num).map_err(|e| format!("\"{s}\": {e}"))?;
    let v = n
        .checked_mul(mult)
        .ok_or_else(|| format!("\"{s}\" is too large"))?;
    if v == 0 {
        return Err(format!(
            "\"{s}\": must be at least 1us (use infinity or max to remove the target)"
        ));
    }
    Ok(Latency::Usec(v))
}

/// The limits in effect for one device of one cgroup (`None`: no limit, or
/// the default weight).  Also the per-device record in saved files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DevLimits {
    pub riops: Option<u64>,
    pub wiops: Option<u64>,
    pub rbps: Option<u64>,
    pub wbps: Option<u64>,
    pub weight: Option<u32>,
    pub latency_us: Option<u64>,
}

impl DevLimits {
    pub fn is_empty(&self) -> bool {
        *self == DevLimits::default()
    }
}

/// io.stat counters of one device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IoStat {
    pub rbytes: u64,
    pub wbytes: u64,
    pub rios: u64,
    pub wios: u64,
    pub dbytes: u64,
    pub dios: u64,
}

/// Settings to write for a device; `None` leaves a key alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Change {
    pub riops: Option<Limit>,
    pub wiops: Option<Limit>,
    pub rbps: Option<Limit>,
    pub wbps: Option<Limit>,
    pub weight: Option<Weight>,
    pub latency: Option<Latency>,
}

fn limit_matches(want: Option<Limit>, have: Option<u64>) -> bool {
    match want {
        None => true,
        Some(Limit::Max) => have.is_none(),
        Some(Limit::Value(v)) => have == Some(v),
    }
}

impl Change {
    pub fn is_empty(&self) -> bool {
        *self == Change::default()
    }

    pub fn has_io_max(&self) -> bool {
        self.riops.is_some() || self.wiops.is_some() || self.rbps.is_some() || self.wbps.is_some()
    }

    /// The change that sets exactly the limits of a saved record.
    pub fn from_limits(l: &DevLimits) -> Change {
        Change {
            riops: l.riops.map(Limit::Value),
            wiops: l.wiops.map(Limit::Value),
            rbps: l.rbps.map(Limit::Value),
            wbps: l.wbps.map(Limit::Value),
            weight: l.weight.map(Weight::Value),
            latency: l.latency_us.map(Latency::Usec),
        }
    }

    /// This change without the settings `have` already has.
    pub fn minus(&self, have: &DevLimits) -> Change {
        let keep = |w: Option<Limit>, h: Option<u64>| if limit_matches(w, h) { None } else { w };
        Change {
            riops: keep(self.riops, have.riops),
            wiops: keep(self.wiops, have.wiops),
            rbps: keep(self.rbps, have.rbps),
            wbps: keep(self.wbps, have.wbps),
            weight: match (self.weight, have.weight) {
                (Some(Weight::Default), None) => None,
                (Some(Weight::Value(w)), Some(h)) if w == h => None,
                (w, _) => w,
            },
            latency: match (self.latency, have.latency_us) {
                (Some(Latency::Max), None) => None,
                (Some(Latency::Usec(w)), Some(h)) if w == h => None,
                (w, _) => w,
            },
        }
    }

    /// `MAJ:MIN key=V ...` with only the keys being changed.
    pub fn io_max_line(&self, dev: DevT) -> Option<String> {
        let mut line = dev.to_string();
        let keys = [
            ("rbps", self.rbps),
            ("wbps", self.wbps),
            ("riops", self.riops),
            ("wiops", self.wiops),
        ];
        let mut any = false;
        for (k, v) in keys {
            match v {
                Some(Limit::Max) => line.push_str(&format!(" {k}=max")),
                Some(Limit::Value(n)) => line.push_str(&format!(" {k}={n}")),
                None => continue,
            }
            any = true;
        }
        any.then_some(line)
    }

    pub fn weight_line(&self, dev: DevT) -> Option<String> {
        self.weight.map(|w| match w {
            Weight::Default => format!("{dev} default"),
            Weight::Value(n) => format!("{dev} {n}"),
        })
    }

    pub fn latency_line(&self, dev: DevT) -> Option<String> {
        self.latency.map(|l| match l {
            Latency::Max => format!("{dev} target=max"),
            Latency::Usec(n) => format!("{dev} target={n}"),
        })
    }
}

/// Lines `MAJ:MIN key=value ...`, merged per device in order: a later line
/// for a device updates the keys it names, as the kernel's state would.
fn keyed_lines(text: &str) -> Vec<(DevT, Vec<(&str, &str)>)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let dev: DevT = w.next()?.parse().ok()?;
            Some((dev, w.filter_map(|t| t.split_once('=')).collect()))
        })
        .collect()
}

fn value(v: &str) -> Option<u64> {
    if v == "max" {
        None
    } else {
        v.parse().ok()
    }
}

/// `io.max`: `MAJ:MIN rbps=N wbps=N riops=N wiops=N` (`max`: no limit).
pub fn parse_io_max(text: &str) -> BTreeMap<DevT, DevLimits> {
    let mut out: BTreeMap<DevT, DevLimits> = BTreeMap::new();
    for (dev, kvs) in keyed_lines(text) {
        let e = out.entry(dev).or_default();
        for (k, v) in kvs {
            let slot = match k {
                "rbps" => &mut e.rbps,
                "wbps" => &mut e.wbps,
                "riops" => &mut e.riops,
                "wiops" => &mut e.wiops,
                _ => continue,
            };
            *slot = value(v);
        }
    }
    out.retain(|_, l| !l.is_empty());
    out
}

/// `io.weight`: `default N` and `MAJ:MIN N` lines; the device weights.
pub fn parse_io_weight(text: &str) -> BTreeMap<DevT, u32> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let mut w = l.split_whitespace();
        let (Some(d), Some(v)) = (w.next(), w.next()) else {
            continue;
        };
        let Ok(dev) = d.parse::<DevT>() else {
            continue;
        };
        match v.parse::<u32>() {
            Ok(n) => {
                out.insert(dev, n);
            }
            Err(_) => {
                out.remove(&dev);
            }
        }
    }
    out
}

/// `io.latency`: `MAJ:MIN target=USEC` (`max`: no target).
pub fn parse_io_latency(text: &str) -> BTreeMap<DevT, u64> {
    let mut out = BTreeMap::new();
    for (dev, kvs) in keyed_lines(text) {
        for (k, v) in kvs {
            if k == "target" {
                match value(v) {
                    Some(n) => out.insert(dev, n),
                    None => out.remove(&dev),
                };
            }
        }
    }
    out
}

/// `io.stat`: `MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N`,
/// perhaps followed by keys of other policies, which are ignored.
pub fn parse_io_stat(text: &str) -> BTreeMap<DevT, IoStat> {
    let mut out: BTreeMap<DevT, IoStat> = BTreeMap::new();
    for (dev, kvs) in keyed_lines(text) {
        let e = out.entry(dev).or_default();
        for (k, v) in kvs {
            let slot = match k {
                "rbytes" => &mut e.rbytes,
                "wbytes" => &mut e.wbytes,
                "rios" => &mut e.rios,
                "wios" => &mut e.wios,
                "dbytes" => &mut e.dbytes,
                "dios" => &mut e.dios,
                _ => continue,
            };
            if let Ok(n) = v.parse() {
                *slot = n;
            }
        }
    }
    out
}

/// The limits in effect for `dev`, from the three files' contents.
pub fn limits_for(io_max: &str, io_weight: &str, io_latency: &str, dev: DevT) -> DevLimits {
    let mut l = parse_io_max(io_max).remove(&dev).unwrap_or_default();
    l.weight = parse_io_weight(io_weight).get(&dev).copied();
    l.latency_us = parse_io_latency(io_latency).get(&dev).copied();
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: DevT = DevT {
        major: 8,
        minor: 16,
    };

    /// systemd.resource-control(5): K, M, G and T are "to the base of
    /// 1000" for IOReadBandwidthMax= and IOReadIOPSMax= alike, and
    /// "infinity" is no limit.
    #[test]
    fn scaled_values() {
        let cases: &[(&str, Result<Limit, ()>)] = &[
            ("1", Ok(Limit::Value(1))),
            ("1000", Ok(Limit::Value(1000))),
            ("1024", Ok(Limit::Value(1024))),
            ("1K", Ok(Limit::Value(1_000))),
            ("20K", Ok(Limit::Value(20_000))),
            ("10K", Ok(Limit::Value(10_000))),
            ("20M", Ok(Limit::Value(20_000_000))),
            ("100M", Ok(Limit::Value(100_000_000))),
            ("1G", Ok(Limit::Value(1_000_000_000))),
            ("3G", Ok(Limit::Value(3_000_000_000))),
            ("5T", Ok(Limit::Value(5_000_000_000_000))),
            ("18446744T", Ok(Limit::Value(18_446_744_000_000_000_000))),
            ("infinity", Ok(Limit::Max)),
            ("max", Ok(Limit::Max)),
            // systemd.resource-control(5)'s own examples.
            ("5M", Ok(Limit::Value(5_000_000))),
            // What parse-size adds: fractions (rounded), lower case, a B,
            // base-1024 units, P and E.
            ("1.5K", Ok(Limit::Value(1_500))),
            ("1.5M", Ok(Limit::Value(1_500_000))),
            ("2.5", Ok(Limit::Value(3))),
            ("10k", Ok(Limit::Value(10_000))),
            ("10KB", Ok(Limit::Value(10_000))),
            ("10Ki", Ok(Limit::Value(10_240))),
            ("1MiB", Ok(Limit::Value(1_048_576))),
            ("10P", Ok(Limit::Value(10_000_000_000_000_000))),
            ("0", Err(())),
            ("0K", Err(())),
            ("0.4", Err(())),
            ("", Err(())),
            ("K", Err(())),
            ("-1", Err(())),
            ("+1", Err(())),
            ("1,5K", Err(())),
            ("10X", Err(())),
            ("MAX", Err(())),
            ("Infinity", Err(())),
            ("inf", Err(())),
            ("junk", Err(())),
            ("99999999999999999999", Err(())),
            ("18446745T", Err(())),
        ];
        for (s, want) in cases {
            assert_eq!(parse_bytes(s).map_err(|_| ()), *want, "{s:?}");
        }
        let iops: &[(&str, Result<Limit, ()>)] = &[
            // systemd.resource-control(5)'s IOReadIOPSMax= example.
            ("1K", Ok(Limit::Value(1_000))),
            ("20K", Ok(Limit::Value(20_000))),
            ("1M", Ok(Limit::Value(1_000_000))),
            ("1.5K", Ok(Limit::Value(1_500))),
            ("4G", Ok(Limit::Value(4_000_000_000))),
            ("4294967294", Ok(Limit::Value(4_294_967_294))),
            ("infinity", Ok(Limit::Max)),
            ("max", Ok(Limit::Max)),
            ("4294967295", Err(())),
            ("5G", Err(())),
            ("1T", Err(())),
            ("-1", Err(())),
            ("10X", Err(())),
            ("", Err(())),
        ];
        for (s, want) in iops {
            assert_eq!(parse_iops(s).map_err(|_| ()), *want, "{s:?}");
        }
    }

    #[test]
    fn latencies() {
        let cases: &[(&str, Result<Latency, ()>)] = &[
            ("500us", Ok(Latency::Usec(500))),
            ("5ms", Ok(Latency::Usec(5000))),
            ("2s", Ok(Latency::Usec(2_000_000))),
            ("max", Ok(Latency::Max)),
            ("infinity", Ok(Latency::Max)),
            ("5", Err(())),
            ("0ms", Err(())),
            ("ms", Err(())),
            ("1.5ms", Err(())),
            ("5 ms", Err(())),
            ("5min", Err(())),
            ("-5ms", Err(())),
        ];
        for (s, want) in cases {
            assert_eq!(parse_latency(s).map_err(|_| ()), *want, "{s:?}");
        }
    }

    #[test]
    fn weights() {
        let cases: &[(&str, Result<Weight, ()>)] = &[
            ("1", Ok(Weight::Value(1))),
            ("10000", Ok(Weight::Value(10000))),
            ("default", Ok(Weight::Default)),
            ("0", Err(())),
            ("10001", Err(())),
            ("1K", Err(())),
            ("", Err(())),
        ];
        for (s, want) in cases {
            assert_eq!(parse_weight(s).map_err(|_| ()), *want, "{s:?}");
        }
    }

    #[test]
    fn io_max_lines() {
        let kernel = "8:16 rbps=2097152 wbps=max riops=max wiops=120\n8:32 rbps=max wbps=max riops=7 wiops=max\n";
        let m = parse_io_max(kernel);
        assert_eq!(m.get(&D).and_then(|l| l.rbps), Some(2097152));
        assert_eq!(m.get(&D).and_then(|l| l.wiops), Some(120));
        assert_eq!(m.get(&D).and_then(|l| l.riops), None);
        // A log of writes, as a fixture file holds it, merges per device.
        let log = "8:16 riops=10\n8:16 wbps=5\n8:16 riops=max\nbogus line\n8:16 x=1\n";
        let l = parse_io_max(log).remove(&D).unwrap_or_default();
        assert_eq!((l.riops, l.wbps), (None, Some(5)));
        assert!(parse_io_max("8:16 riops=3\n8:16 riops=max\n").is_empty());
    }

    #[test]
    fn weight_and_latency_lines() {
        let w = parse_io_weight("default 100\n8:16 200\n8:32 50\n8:32 default\n");
        assert_eq!(w.get(&D), Some(&200));
        assert_eq!(w.len(), 1);
        let l = parse_io_latency("8:16 target=5000\n8:32 target=10\n8:32 target=max\n");
        assert_eq!(l.get(&D), Some(&5000));
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn io_stat_lines() {
        let s = parse_io_stat(
            "8:16 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0 cost.vrate=100.00\n\
             259:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=5 dios=6\nnot a line\n",
        );
        assert_eq!(s.get(&D).map(|x| (x.rbytes, x.wios)), Some((4096, 2)));
        let n = DevT {
            major: 259,
            minor: 0,
        };
        assert_eq!(s.get(&n).map(|x| x.dios), Some(6));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn change_lines() {
        let c = Change {
            riops: Some(Limit::Value(1000)),
            wbps: Some(Limit::Max),
            weight: Some(Weight::Value(300)),
            latency: Some(Latency::Usec(5000)),
            ..Change::default()
        };
        assert_eq!(
            c.io_max_line(D).as_deref(),
            Some("8:16 wbps=max riops=1000")
        );
        assert_eq!(c.weight_line(D).as_deref(), Some("8:16 300"));
        assert_eq!(c.latency_line(D).as_deref(), Some("8:16 target=5000"));
        let have = DevLimits {
            riops: Some(1000),
            weight: Some(300),
            ..DevLimits::default()
        };
        let rest = c.minus(&have);
        assert_eq!(rest.io_max_line(D), None);
        assert_eq!(rest.weight_line(D), None);
        assert_eq!(rest.latency_line(D).as_deref(), Some("8:16 target=5000"));
    }
}
