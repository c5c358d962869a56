// SPDX-License-Identifier: GPL-2.0
//! Passthru subsystems, named `NQN passthru`, against fixture trees: bind
//! and unbind through `passthru/cgroup_id`, io.weight and io.latency on the
//! controller's disks, io.max refused (passthrough requests bypass
//! blk-throttle), status, save and restore.

mod common;

use std::fs;

use common::{d, Fixture, CTRL1, CTRL2, NQN_A, NQN_P};

const IO_MAX: &str = "io.max does not apply to passthru subsystems: passthrough requests bypass blk-throttle; use --weight (io.cost) or --latency (io.latency)";

fn passthru(enabled: bool) -> Fixture {
    let f = Fixture::new();
    f.make_passthru(&CTRL1, enabled);
    f
}

#[test]
fn bind_and_unbind_write_passthru_cgroup_id() {
    let f = passthru(false);
    let out = f.ok(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    let id = f.ino("tenant-a");
    assert!(
        out.starts_with(&format!(
            "bound: {NQN_P} passthru -> cgroup tenant-a (id {id})\n"
        )),
        "{out}"
    );
    assert!(
        out.contains("note: load nvmet_cgroup before enabling the passthru controller"),
        "{out}"
    );
    assert_eq!(f.pt_cgroup_id(NQN_P), id);
    // Only passthru/cgroup_id: no namespace of another subsystem, nor the
    // passthru directory of one, is touched.
    assert_eq!(f.pt_cgroup_id(NQN_A), 0);
    assert_eq!(
        f.read(&format!("configfs/subsystems/{NQN_P}/passthru/enable")),
        "0\n"
    );
    let out = f.ok(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    assert!(out.starts_with("already bound: "), "{out}");
    let out = f.ok(&["unbind", NQN_P, "passthru"]);
    assert_eq!(out, format!("unbound: {NQN_P} passthru\n"));
    assert_eq!(f.pt_cgroup_id(NQN_P), 0);
}

/// passthru/cgroup_id can't change while passthru/enable reads 1 (the
/// kernel says EBUSY): refused without --reenable, with nothing changed;
/// with --reenable, passthru/enable goes to 0 and back to 1 around the
/// write, and the module must be loaded for a non-zero ID.
#[test]
fn enabled_passthru_needs_reenable_and_the_module() {
    let f = passthru(true);
    let before = f.snapshot();
    let (code, _, err) = f.run(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "nvmet-cgroup: error: {NQN_P} passthru is enabled: its cgroup_id can only change while it is disabled (use --reenable to disable it, change it and enable it again)\n"
        )
    );
    assert_eq!(f.snapshot(), before);

    let args = [
        "bind",
        NQN_P,
        "passthru",
        "--cgroup",
        "tenant-a",
        "--reenable",
    ];
    let (code, _, err) = f.run(&args);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("cannot enable {NQN_P} passthru with a cgroup"))
            && err.contains("modprobe nvmet_cgroup"),
        "{err}"
    );
    assert_eq!(f.snapshot(), before);

    f.load_module();
    f.ok(&args);
    assert_eq!(f.pt_cgroup_id(NQN_P), f.ino("tenant-a"));
    assert_eq!(
        f.read(&format!("configfs/subsystems/{NQN_P}/passthru/enable")),
        "1\n"
    );

    let before = f.snapshot();
    let (code, _, err) = f.run(&["unbind", NQN_P, "passthru"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("is enabled") && err.contains("--reenable"),
        "{err}"
    );
    assert_eq!(f.snapshot(), before);
    f.ok(&["unbind", NQN_P, "passthru", "--reenable"]);
    assert_eq!(f.pt_cgroup_id(NQN_P), 0);
    assert_eq!(
        f.read(&format!("configfs/subsystems/{NQN_P}/passthru/enable")),
        "1\n"
    );
}

#[test]
fn passthru_names_are_checked() {
    let f = passthru(false);
    // A subsystem without passthru/ (nvmet built without passthru).
    fs::create_dir_all(f.p("configfs/subsystems/nqn.nopt/namespaces")).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["bind", NQN_P, "passthrough", "--cgroup", "tenant-a"],
            "\"passthrough\" is neither a namespace ID (1 to 4294967295) nor passthru",
        ),
        (
            vec!["bind", NQN_P, "0", "--cgroup", "tenant-a"],
            "\"0\" is neither a namespace ID",
        ),
        (
            vec!["bind", "nqn.nopt", "passthru", "--cgroup", "tenant-a"],
            "subsystem nqn.nopt has no passthru directory",
        ),
        (vec!["status", NQN_P, "1"], "has no namespace 1"),
    ];
    for (args, want) in cases {
        let before = f.snapshot();
        let (code, out, err) = f.run(&args);
        assert_ne!(code, 0, "{args:?} succeeded: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
        assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
    }
}

/// --riops, --wiops, --rbps and --wbps are refused for passthru, alone or
/// with --weight and --latency, before anything is read or written.
#[test]
fn limit_refuses_io_max_for_passthru() {
    let f = passthru(false);
    f.ok(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    let cases: &[&[&str]] = &[
        &["--riops", "1K"],
        &["--wiops", "1K"],
        &["--rbps", "10M"],
        &["--wbps", "max"],
        &["--weight", "300", "--riops", "1K"],
        &["--latency", "5ms", "--wbps", "1M"],
        &["--weight", "300", "--latency", "5ms", "--rbps", "1M"],
    ];
    for opts in cases {
        let mut args = vec!["limit", NQN_P, "passthru"];
        args.extend_from_slice(opts);
        let before = f.snapshot();
        let (code, out, err) = f.run(&args);
        assert_eq!(code, 1, "{args:?} succeeded: {out}");
        assert_eq!(out, "", "{args:?}");
        assert_eq!(err, format!("nvmet-cgroup: error: {IO_MAX}\n"), "{args:?}");
        assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
    }
    // An unbound passthru subsystem gets the same answer first.
    f.ok(&["unbind", NQN_P, "passthru"]);
    let (code, _, err) = f.run(&["limit", NQN_P, "passthru", "--riops", "1K"]);
    assert_eq!(code, 1);
    assert!(err.contains(IO_MAX), "{err}");
}

/// --weight and --latency go to every disk of the controller (its
/// namespaces), not to its generic ng device.
#[test]
fn weight_and_latency_go_to_the_controllers_disks() {
    let f = passthru(false);
    f.ok(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    let out = f.ok(&[
        "limit",
        NQN_P,
        "passthru",
        "--weight",
        "300",
        "--latency",
        "5ms",
    ]);
    assert!(
        out.starts_with(&format!(
            "{NQN_P} passthru (device controller nvme0 (241:0)) in cgroup tenant-a:\n"
        )),
        "{out}"
    );
    assert!(
        out.contains("259:0 (nvme0n1): io.weight \"259:0 300\""),
        "{out}"
    );
    assert_eq!(
        f.read("cgroup/tenant-a/io.weight"),
        "default 100\n259:0 300\n259:1 300\n"
    );
    assert_eq!(
        f.read("cgroup/tenant-a/io.latency"),
        "259:0 target=5000\n259:1 target=5000\n"
    );
    assert_eq!(f.read("cgroup/tenant-a/io.max"), "");
}

/// With native multipath the controller's disks are its per-path disks
/// nvme0c0nN (where passthrough requests go), not the heads nvme0nN.
#[test]
fn multipath_settings_go_to_the_per_path_disks() {
    let f = Fixture::new();
    let mp = common::CtrlDevs {
        multipath: true,
        ..CTRL1
    };
    f.make_passthru(&mp, false);
    fs::write(f.ns(NQN_A, 4).join("cgroup_id"), "0\n").unwrap();
    f.ok(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    let out = f.ok(&["limit", NQN_P, "passthru", "--weight", "200"]);
    assert!(out.contains("259:0 (nvme0c0n1)"), "{out}");
    assert_eq!(
        f.read("cgroup/tenant-a/io.weight"),
        "default 100\n259:0 200\n259:1 200\n"
    );

    // Saved by kernel name (a per-path disk has no device node), restored
    // by that name among the controller's disks.
    let file = f.p("cg.json");
    let file = file.to_str().unwrap();
    f.ok(&["save", file]);
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
    let rec = &saved["namespaces"][0];
    assert_eq!(rec["nsid"], "passthru");
    assert_eq!(rec["devices"][0]["path"], "/dev/nvme0c0n1");
    fs::write(f.pt(NQN_P).join("cgroup_id"), "0\n").unwrap();
    fs::write(f.cg("tenant-a/io.weight"), "default 100\n").unwrap();
    let out = f.ok(&["restore", file]);
    assert!(out.contains("2 limit line(s) written"), "{out}");
    assert_eq!(
        f.read("cgroup/tenant-a/io.weight"),
        "default 100\n259:0 200\n259:1 200\n"
    );
    assert_eq!(f.pt_cgroup_id(NQN_P), f.ino("tenant-a"));
}

#[test]
fn status_lists_passthru_without_io_max() {
    let f = passthru(true);
    // Unused passthru directories (NQN_A's, NQN_B's) are not listed.
    let out = f.ok(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let nss = v["namespaces"].as_array().unwrap();
    assert_eq!(nss.len(), 6, "{out}");
    let pt = &nss[5];
    assert_eq!(pt["nqn"], NQN_P);
    assert_eq!(pt["nsid"], "passthru");
    assert_eq!(pt["cgroup_state"], "none");

    f.load_module();
    f.ok(&[
        "bind",
        NQN_P,
        "passthru",
        "--cgroup",
        "tenant-a",
        "--reenable",
    ]);
    f.ok(&["limit", NQN_P, "passthru", "--weight", "300"]);
    // io.max set by hand on one of the controller's disks, and io.stat.
    fs::write(f.cg("tenant-a/io.max"), "259:1 riops=1000 wbps=5000000\n").unwrap();
    fs::write(
        f.cg("tenant-a/io.stat"),
        "259:0 rbytes=8192 wbytes=4096 rios=2 wios=1 dbytes=0 dios=0\n",
    )
    .unwrap();
    let id = f.ino("tenant-a");
    fs::create_dir_all(f.p("debug/nvmet_cgroup")).unwrap();
    fs::write(
        f.p("debug/nvmet_cgroup/namespaces"),
        format!("{NQN_P} 0 cgroup_id={id} mode=fast_path rw=context: io.cost enabled\n"),
    )
    .unwrap();

    let out = f.ok(&["status", NQN_P, "passthru", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let nss = v["namespaces"].as_array().unwrap();
    assert_eq!(nss.len(), 1);
    let pt = &nss[0];
    assert_eq!(pt["nsid"], "passthru");
    assert_eq!(pt["enabled"], true);
    assert_eq!(pt["cgroup_state"], "bound");
    assert_eq!(pt["cgroup_path"], "tenant-a");
    assert_eq!(pt["device_path"], f.p("dev/nvme0").display().to_string());
    assert_eq!(pt["top_device"], "241:0");
    let devs = pt["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 2);
    assert_eq!(devs[0]["dev"], "259:0");
    assert_eq!(devs[0]["name"], "nvme0n1");
    assert_eq!(devs[0]["limits"]["weight"], 300);
    assert_eq!(devs[0]["stat"]["rbytes"], 8192);
    for dev in devs {
        for key in ["riops", "wiops", "rbps", "wbps"] {
            assert_eq!(dev["limits"][key], serde_json::Value::Null, "{out}");
        }
    }
    assert_eq!(
        pt["exec"],
        format!("cgroup_id={id} mode=fast_path rw=context: io.cost enabled")
    );
    let warnings = pt["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{out}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("the cgroup has io.max limits on 259:1, which do not apply"),
        "{out}"
    );

    let out = f.ok(&["status", NQN_P, "passthru"]);
    println!("{out}");
    assert!(out.starts_with(&format!("{NQN_P} passthru\n")), "{out}");
    assert!(
        out.contains("  devices      241:0 -> 259:0 259:1\n"),
        "{out}"
    );
    assert!(
        out.contains("  warning      the cgroup has io.max limits on 259:1"),
        "{out}"
    );
    let header = out
        .lines()
        .find(|l| l.trim_start().starts_with("DEVICE"))
        .unwrap_or_default();
    assert!(
        header.contains("WEIGHT") && header.contains("READ"),
        "{out}"
    );
    for col in ["RIOPS", "WIOPS", "RBPS", "WBPS"] {
        assert!(!header.contains(col), "{out}");
    }
    assert!(!out.contains("1000") && !out.contains("5.0 MB/s"), "{out}");
    let row = out
        .lines()
        .find(|l| l.contains("259:0 nvme0n1"))
        .unwrap_or_default();
    assert!(row.contains("300") && row.contains("8.2 kB"), "{out}");
}

/// save records a passthru binding (without io.max, which does not apply
/// to it); restore after a reboot binds it again and sets its disks'
/// weight under their new numbers; a second restore changes nothing.
#[test]
fn save_then_restore_passthru_after_reboot() {
    let f = passthru(true);
    fs::write(f.ns(NQN_A, 4).join("cgroup_id"), "0\n").unwrap();
    f.load_module();
    f.ok(&[
        "bind",
        NQN_P,
        "passthru",
        "--cgroup",
        "tenant-a",
        "--reenable",
    ]);
    f.ok(&[
        "limit",
        NQN_P,
        "passthru",
        "--weight",
        "300",
        "--latency",
        "2ms",
    ]);
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "1", "--riops", "1K"]);
    // io.max by hand on a disk of the controller: not saved.
    fs::write(
        f.cg("tenant-a/io.max"),
        format!(
            "{}\n259:0 riops=7\n",
            f.read("cgroup/tenant-a/io.max").trim_end()
        ),
    )
    .unwrap();
    let file = f.p("etc/nvmet/cgroup.json");
    let file = file.to_str().unwrap();
    let out = f.ok(&["save", file]);
    assert!(
        out.contains(&format!(
            "note: {NQN_P} passthru: io.max on 259:0 not saved: {IO_MAX}"
        )),
        "{out}"
    );
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
    let recs = saved["namespaces"].as_array().unwrap();
    assert_eq!(recs.len(), 2);
    let pt = &recs[1];
    assert_eq!(pt["nqn"], NQN_P);
    assert_eq!(pt["nsid"], "passthru");
    assert_eq!(pt["cgroup"], "tenant-a");
    assert_eq!(pt["device_path"], f.p("dev/nvme0").display().to_string());
    assert_eq!(
        pt["stack"],
        serde_json::json!([
            "nvme ctrl serial=PT-SERIAL-0 > disk wwid=eui.00000001",
            "nvme ctrl serial=PT-SERIAL-0 > disk wwid=eui.00000002"
        ])
    );
    assert_eq!(
        pt["devices"],
        serde_json::json!([
            { "path": "/dev/disk/by-id/nvme-eui.00000001", "weight": 300, "latency_us": 2000 },
            { "path": "/dev/disk/by-id/nvme-eui.00000002", "weight": 300, "latency_us": 2000 }
        ])
    );

    // "Reboot": a new tenant-a, new device numbers, nothing bound.
    fs::create_dir_all(f.p("old")).unwrap();
    fs::rename(f.cg("tenant-a"), f.p("old/tenant-a")).unwrap();
    f.make_cgroup("tenant-a", "io\n");
    f.remove_devices();
    f.make_devices(&common::BOOT2);
    f.make_passthru(&CTRL2, true);
    let dev = f.p("dev");
    f.make_ns(NQN_A, 1, &dev.join("sdb1"), false, 0);
    assert_eq!(f.pt_cgroup_id(NQN_P), 0);

    let out = f.ok(&["restore", file]);
    assert!(out.contains("restored 2"), "{out}");
    assert!(
        out.contains(&format!(
            "{NQN_P} passthru: cgroup tenant-a (id {}): cgroup_id set, 4 limit line(s) written",
            f.ino("tenant-a")
        )),
        "{out}"
    );
    assert_eq!(f.pt_cgroup_id(NQN_P), f.ino("tenant-a"));
    assert_eq!(
        f.read(&format!("configfs/subsystems/{NQN_P}/passthru/enable")),
        "1\n"
    );
    assert_eq!(
        f.read("cgroup/tenant-a/io.weight"),
        format!("default 100\n{} 300\n{} 300\n", d(CTRL2.n1), d(CTRL2.n2))
    );
    assert_eq!(
        f.read("cgroup/tenant-a/io.latency"),
        format!("{} target=2000\n{} target=2000\n", d(CTRL2.n1), d(CTRL2.n2))
    );
    // Only the namespace's io.max line.
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        format!("{} riops=1000\n", d(common::BOOT2.sdb))
    );

    let before = f.snapshot();
    let out = f.ok(&["restore", file]);
    assert_eq!(out.matches("unchanged").count(), 2, "{out}");
    assert_eq!(f.snapshot(), before);
}

/// A passthru record with io.max keys (written by hand, or by another
/// tool) is refused whole, with nothing written for it; the other records
/// are restored.
#[test]
fn restore_refuses_io_max_for_passthru() {
    let f = passthru(false);
    let file = f.p("cg.json");
    let by_id = "/dev/disk/by-id/nvme-eui.00000001";
    let text = format!(
        r#"{{"version":1,"namespaces":[
        {{"nqn":"{NQN_A}","nsid":1,"cgroup":"tenant-a","device_path":"/x"}},
        {{"nqn":"{NQN_P}","nsid":"passthru","cgroup":"tenant-c","device_path":"/dev/nvme0",
          "devices":[{{"path":"{by_id}","weight":300}},
                     {{"path":"/dev/disk/by-id/nvme-eui.00000002","weight":300,"riops":1000}}]}}]}}"#
    );
    fs::write(&file, text).unwrap();
    let before = f.snapshot();
    let (code, out, err) = f.run(&["restore", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        err,
        format!(
            "nvmet-cgroup: error: {NQN_P} passthru: device /dev/disk/by-id/nvme-eui.00000002 has io.max limits (riops, wiops, rbps or wbps): {IO_MAX}; nothing restored for it (remove them from the file)\n\
             nvmet-cgroup: error: 1 of 2 record(s) in {} could not be restored\n",
            file.display()
        )
    );
    assert!(
        out.contains(&format!("{NQN_A} nsid 1: cgroup tenant-a")),
        "{out}"
    );
    // The namespace restored; nothing for the passthru record: no
    // tenant-c, no io file written, passthru/cgroup_id still 0.
    assert_eq!(f.cgroup_id(NQN_A, 1), f.ino("tenant-a"));
    assert!(!f.cg("tenant-c").exists());
    assert_eq!(f.pt_cgroup_id(NQN_P), 0);
    let changed = f.changed_since(&before);
    assert_eq!(
        changed,
        [
            "cgroup/cgroup.subtree_control".to_string(),
            format!("configfs/subsystems/{NQN_A}/namespaces/1/cgroup_id")
        ]
    );
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "+io\n");
}

/// A passthru record's device must be one of the controller's disks now:
/// a path that names another disk (a by-id link gone stale, a hand-edited
/// file) is refused, with nothing written for the record.
#[test]
fn restore_refuses_a_disk_not_on_the_controller() {
    let f = passthru(false);
    let file = f.p("cg.json");
    let text = format!(
        r#"{{"version":1,"namespaces":[
        {{"nqn":"{NQN_P}","nsid":"passthru","cgroup":"tenant-a","device_path":"/dev/nvme0",
          "devices":[{{"path":"/dev/nvme0n1","weight":300}},{{"path":"/dev/sdb","weight":300}}]}}]}}"#
    );
    fs::write(&file, text).unwrap();
    let before = f.snapshot();
    let (code, out, err) = f.run(&["restore", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.starts_with(&format!(
            "nvmet-cgroup: error: {NQN_P} passthru: device /dev/sdb: /dev/sdb (8:16) is not one of the controller's disks now\n"
        )),
        "{err}"
    );
    assert_eq!(f.snapshot(), before);
}

/// A passthru device_path that is not a controller's character device.
#[test]
fn passthru_device_must_be_a_controller() {
    let f = passthru(false);
    f.ok(&["bind", NQN_P, "passthru", "--cgroup", "tenant-a"]);
    let sdb = f.p("dev/sdb").display().to_string();
    fs::write(f.pt(NQN_P).join("device_path"), format!("{sdb}\n")).unwrap();
    let (code, _, err) = f.run(&["limit", NQN_P, "passthru", "--weight", "300"]);
    assert_eq!(code, 1);
    assert!(err.contains("is not a character device"), "{err}");
    let ng = f.p("dev/ng0n1").display().to_string();
    fs::write(f.pt(NQN_P).join("device_path"), format!("{ng}\n")).unwrap();
    let (code, _, err) = f.run(&["limit", NQN_P, "passthru", "--weight", "300"]);
    assert_eq!(code, 1);
    assert!(err.contains("is ng0n1, not an NVMe controller"), "{err}");
    assert_eq!(f.read("cgroup/tenant-a/io.weight"), "default 100\n");
}
